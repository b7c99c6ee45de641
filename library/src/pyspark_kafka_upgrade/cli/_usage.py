"""What the command line accepts beyond one command: the parsers and options several commands
share, each built here once, and the usage errors argparse cannot find by itself.

--config and --set are accepted by every parser, so they work before or after a command at
any depth. Each parser stores them under its own dests: a subparser parses into a fresh
namespace and then copies every value it holds over the parent's (Python 3.11), so one shared
dest would lose what the parent parsed. :func:`merge_settings_options` joins them afterwards.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_LEVEL_SEPARATOR = "@"


class UsageError(Exception):
    """Arguments argparse accepted one by one but that do not fit together."""


class Commands:
    """One parser's subcommands; each of them accepts --config and --set too."""

    def __init__(
        self, parser: argparse.ArgumentParser, *, dest: str, depth: int, prog: str
    ) -> None:
        self._group = parser.add_subparsers(dest=dest, metavar="COMMAND", required=True)
        self._depth = depth
        self._prog = prog

    def add(
        self,
        name: str,
        *,
        help: str,
        description: str,
        examples: Sequence[str],
        raw: bool = False,
    ) -> argparse.ArgumentParser:
        """A subcommand whose --help ends with ``examples`` (``{prog}`` is the command)."""
        text = description.format(prog=self._prog)
        command = self._group.add_parser(
            name,
            help=help,
            description=text if raw else textwrap.fill(text, 88),
            epilog=_examples(examples, self._prog),
            # Raw, so that the examples keep their lines; plain descriptions are filled above.
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_settings_options(command, depth=self._depth, prog=self._prog)
        return command

    def group(self, name: str, *, help: str, description: str, examples: Sequence[str]) -> Commands:
        """A subcommand that only holds subcommands (``config``: ``config show``)."""
        command = self.add(name, help=help, description=description, examples=examples)
        return self.below(command, dest=f"{name}_command")

    def below(self, command: argparse.ArgumentParser, *, dest: str) -> Commands:
        """The subcommands of ``command``, one of the parsers :meth:`add` returned."""
        return Commands(command, dest=dest, depth=self._depth + 1, prog=self._prog)


def _examples(examples: Sequence[str], prog: str) -> str:
    if not examples:
        raise ValueError("every command's --help ends with an example")
    heading = "example:" if len(examples) == 1 else "examples:"
    return "\n".join([heading, *(f"  {line.format(prog=prog)}" for line in examples)])


# -- options several commands take ------------------------------------------------------------


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


def add_json(command: argparse.ArgumentParser, what: str) -> None:
    """--json: print ``what`` (e.g. "the report") as JSON instead of as text."""
    command.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def add_master(command: argparse.ArgumentParser, *, metavar: str | None = "URL") -> None:
    """--master, for the commands that start Spark."""
    command.add_argument(
        "--master",
        metavar=metavar,
        help="Spark master, e.g. local[2]; default: spark-submit's or Spark's own default",
    )


def add_generation(command: argparse.ArgumentParser, help: str, *, many: bool = False) -> None:
    """--generation N (``many``: one or more)."""
    command.add_argument(
        "--generation",
        type=positive_int,
        nargs="+" if many else None,
        metavar="N",
        help=help,
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
