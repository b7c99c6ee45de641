"""The whole command line: the top-level parser, every command's, and the checks after them."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli import _table
from pyspark_kafka_upgrade.cli._usage import (
    UsageError,
    add_settings_options,
    merge_settings_options,
)

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._domain.values.project import Project


def build_parser(project: Project) -> argparse.ArgumentParser:
    prog = project.command
    table = _table.load()
    parser = argparse.ArgumentParser(
        prog=prog,
        description=table.description,
        epilog=table.epilog.format(
            prog=prog, config_env_var=project.config_env_var, env_prefix=project.env_prefix
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {project.version}")
    add_settings_options(parser, depth=0, prog=prog)
    _table.build(parser, table, prog)
    return parser


def parse_args(project: Project, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; ``config`` and ``overrides`` then hold every level's options,
    and ``handler`` the command's function."""
    parser = build_parser(project)
    args = parser.parse_args(argv)
    try:
        merge_settings_options(args)
        # A command's check refuses combinations argparse cannot express.
        if args.check is not None:
            check: Callable[[argparse.Namespace], None] = _table.resolve(args.check)
            check(args)
    except UsageError as error:
        # One line, like every other error here; argparse's usage block would bury it.
        parser.exit(2, f"{project.command}: error: {error}\n")
    args.handler = _table.resolve(args.handler)
    return args
