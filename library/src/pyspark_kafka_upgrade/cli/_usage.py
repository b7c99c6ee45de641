"""What the command line accepts beyond the command table: --config and --set on every
parser, the types of arguments, and the usage errors argparse cannot find by itself.

--config and --set are accepted by every parser, so they work before or after a command at
any depth. Each parser stores them under its own dests: a subparser parses into a fresh
namespace and then copies every value it holds over the parent's (Python 3.11), so one shared
dest would lose what the parent parsed. :func:`merge_settings_options` joins them afterwards.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

_LEVEL_SEPARATOR = "@"


class UsageError(Exception):
    """Arguments argparse accepted one by one but that do not fit together."""


# -- options every command takes, and the types of others --------------------------------------


def add_settings_options(parser: argparse.ArgumentParser, *, depth: int, prog: str) -> None:
    """--config and --set, stored under this parser's own dests (see the module doc)."""
    # Only the top-level help carries the settings epilog that "see below" points to.
    where = "see below" if depth == 0 else f"see {prog} --help"
    parser.add_argument(
        "--config",
        dest=_level_dest("config", depth),
        action="append",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help=f"TOML settings file ({where})",
    )
    parser.add_argument(
        "--set",
        dest=_level_dest("overrides", depth),
        action="append",
        default=argparse.SUPPRESS,
        metavar="SECTION.KEY=VALUE",
        help="override one setting; wins over the file and the environment",
    )


def positive_int(text: str) -> int:
    """A generation number: argparse's ``type`` for them."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("generations are numbered from 1")
    return value


def instant(text: str) -> int:
    """An ISO-8601 time, as epoch milliseconds: argparse's ``type`` for --from and --to."""
    from pyspark_kafka_upgrade._domain.values.time_text import parse_instant

    try:
        return parse_instant(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# The types a command table's arguments name (see commands.toml).
ARGUMENT_TYPES: dict[str, Callable[[str], object]] = {
    "path": Path,
    "int": int,
    "generation": positive_int,
    "instant": instant,
}


# -- joining the levels' settings options -------------------------------------------------------


def _level_dest(name: str, depth: int) -> str:
    return f"{name}{_LEVEL_SEPARATOR}{depth}"


def merge_settings_options(args: argparse.Namespace) -> None:
    """Set ``args.config`` and ``args.overrides`` from every level's --config and --set."""
    # A parser only sees the arguments before its subcommand's name, so ordering the levels by
    # depth is command-line order, which --set relies on: the later one for a key wins.
    configs: list[Path] = _pop_levels(args, "config")
    overrides: list[str] = _pop_levels(args, "overrides")
    different = {path.resolve(): path for path in configs}
    if len(different) > 1:
        first, second = list(different.values())[:2]
        raise UsageError(f"--config given twice, {first} and {second}: give one file")
    args.config = configs[0] if configs else None
    args.overrides = overrides


def _pop_levels(args: argparse.Namespace, name: str) -> list[Any]:
    levels: dict[int, list[Any]] = {}
    for dest in list(vars(args)):
        base, separator, depth = dest.partition(_LEVEL_SEPARATOR)
        if separator and base == name:
            levels[int(depth)] = getattr(args, dest)
            delattr(args, dest)
    return [value for depth in sorted(levels) for value in levels[depth]]
