"""The whole command line: the top-level parser, every command's, and the checks after them."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._checkpoint import add_checkpoint
from pyspark_kafka_upgrade.cli._config import add_config
from pyspark_kafka_upgrade.cli._connector import add_connector
from pyspark_kafka_upgrade.cli._output import add_output
from pyspark_kafka_upgrade.cli._run import add_run
from pyspark_kafka_upgrade.cli._upgrade import add_upgrade
from pyspark_kafka_upgrade.cli._usage import (
    Commands,
    UsageError,
    add_settings_options,
    merge_settings_options,
)
from pyspark_kafka_upgrade.cli._verify import add_verify

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._domain.values.project import Project

DESCRIPTION = """\
A Kafka -> event-time windows -> append-mode file sink pipeline, with an offset ledger
that lets you upgrade it onto a new checkpoint without losing or duplicating an event.
"""

SETTINGS_HELP = """\
settings are layered, later wins:
  1. the package's defaults.toml (written from the template answers)
  2. the config file: --config, else ${config_env_var},
     else ./pipeline.toml if present
  3. environment variables {env_prefix}<SECTION>__<KEY>,
     e.g. {env_prefix}KAFKA__BOOTSTRAP_SERVERS
  4. --set section.key=value (repeatable), e.g. --set window.watermark_delay='10 minutes'
--config and --set go before or after the command; of two --set for one key, the later wins.

examples:
  {prog} config show
  {prog} --set kafka.bootstrap_servers=broker:9092 config show --json
  {prog} config show --json --set kafka.bootstrap_servers=broker:9092    # the same
"""

# In the order the top-level --help lists them.
_COMMANDS = (
    add_config,
    add_run,
    add_checkpoint,
    add_connector,
    add_upgrade,
    add_output,
    add_verify,
)


def build_parser(project: Project) -> argparse.ArgumentParser:
    prog = project.command
    parser = argparse.ArgumentParser(
        prog=prog,
        description=DESCRIPTION,
        epilog=SETTINGS_HELP.format(
            prog=prog, config_env_var=project.config_env_var, env_prefix=project.env_prefix
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {project.version}")
    add_settings_options(parser, depth=0, prog=prog)
    commands = Commands(parser, dest="command", depth=1, prog=prog)
    for add in _COMMANDS:
        add(commands)
    return parser


def parse_args(project: Project, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; ``config`` and ``overrides`` then hold every level's options."""
    parser = build_parser(project)
    args = parser.parse_args(argv)
    try:
        merge_settings_options(args)
        # A command's set_defaults(check=...) refuses combinations argparse cannot express.
        check: Callable[[argparse.Namespace], None] | None = getattr(args, "check", None)
        if check is not None:
            check(args)
    except UsageError as error:
        # One line, like every other error here; argparse's usage block would bury it.
        parser.exit(2, f"{project.command}: error: {error}\n")
    return args
