"""The command table: ``commands.toml`` read once, checked, and built into argparse parsers.

The table is data so that the words of every command are reviewed in one file and each
command's code is only its handler. Each handler's module is imported when its command runs.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from pyspark_kafka_upgrade.cli._usage import ARGUMENT_TYPES, add_settings_options

TABLE = "commands.toml"

# add_argument's keywords a table may give; `type` by its name in ARGUMENT_TYPES.
_ARGUMENT_KEYS = frozenset({"action", "nargs", "type", "default", "metavar", "dest", "help"})
_COMMAND_KEYS = frozenset({"path", "help", "description", "examples", "handler", "check"})


class CommandTableError(Exception):
    """A command table argparse cannot be built from: a fault of the library, not the user."""


@dataclass(frozen=True, slots=True)
class Argument:
    """One add_argument call: its flags (or positional name) and its keywords."""

    flags: tuple[str, ...]
    keywords: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Command:
    """One command of the table; ``path`` is its words, ``("upgrade", "plan")``."""

    path: tuple[str, ...]
    help: str
    description: str
    examples: tuple[str, ...]
    arguments: tuple[Argument, ...] = ()
    handler: str | None = None  # "module:function" in this package; a group has none
    check: str | None = None  # the same, for a check of the arguments together


@dataclass(frozen=True, slots=True)
class Table:
    description: str
    epilog: str
    commands: tuple[Command, ...]  # parents before their subcommands, in --help's order


@functools.cache
def load() -> Table:
    """The package's table."""
    text = resources.files(__package__).joinpath(TABLE).read_text(encoding="utf-8")
    return parse(tomllib.loads(text))


def parse(document: Mapping[str, Any]) -> Table:
    """A table from its TOML document, or :class:`CommandTableError` naming what is wrong."""
    common = document.get("common", {})
    commands = tuple(_command(entry, common) for entry in document["command"])
    known: set[tuple[str, ...]] = {()}
    for command in commands:
        if command.path[:-1] not in known:
            raise CommandTableError(f"{' '.join(command.path)}: its parent command comes later")
        known.add(command.path)
    program = document["program"]
    return Table(program["description"], program["epilog"], commands)


def _command(entry: Mapping[str, Any], common: Mapping[str, Mapping[str, Any]]) -> Command:
    name = entry.get("path", "?")
    unknown = set(entry) - _COMMAND_KEYS - {"argument"}
    if unknown:
        raise CommandTableError(f"{name}: unknown keys {sorted(unknown)}")
    if not entry.get("examples"):
        raise CommandTableError(f"{name}: every command's --help ends with an example")
    for key in ("handler", "check"):
        if key in entry and entry[key].count(":") != 1:
            raise CommandTableError(f"{name}: {key} {entry[key]!r} is not module:function")
    return Command(
        path=tuple(name.split()),
        help=entry["help"],
        description=entry["description"],
        examples=tuple(entry["examples"]),
        arguments=tuple(_argument(name, given, common) for given in entry.get("argument", ())),
        handler=entry.get("handler"),
        check=entry.get("check"),
    )


def _argument(
    command: str, given: Mapping[str, Any], common: Mapping[str, Mapping[str, Any]]
) -> Argument:
    own = dict(given)
    name = own.pop("common", None)
    base = {} if name is None else common.get(name)
    if base is None:
        raise CommandTableError(f"{command}: no common argument {name!r}")
    merged = {**base, **own}
    flags = tuple(merged.pop("flags", ()))
    if not flags:
        raise CommandTableError(f"{command}: an argument without flags")
    unknown = set(merged) - _ARGUMENT_KEYS
    if unknown:
        raise CommandTableError(f"{command} {flags[0]}: unknown keys {sorted(unknown)}")
    if "type" in merged:
        if merged["type"] not in ARGUMENT_TYPES:
            raise CommandTableError(f"{command} {flags[0]}: no argument type {merged['type']!r}")
        merged["type"] = ARGUMENT_TYPES[merged["type"]]
    return Argument(flags, merged)


def build(parser: argparse.ArgumentParser, table: Table, prog: str) -> None:
    """Add every command of ``table`` below ``parser``, the top-level one."""
    parsers: dict[tuple[str, ...], argparse.ArgumentParser] = {(): parser}
    groups: dict[tuple[str, ...], Any] = {}
    for command in table.commands:
        parent = command.path[:-1]
        if parent not in groups:
            dest = f"{parent[-1]}_command" if parent else "command"
            groups[parent] = parsers[parent].add_subparsers(
                dest=dest, metavar="COMMAND", required=True
            )
        child = groups[parent].add_parser(
            command.path[-1],
            help=command.help,
            description=command.description.format(prog=prog),
            epilog=_examples(command.examples, prog),
            # Raw: the table's descriptions and examples are printed as written.
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_settings_options(child, depth=len(command.path), prog=prog)
        for argument in command.arguments:
            child.add_argument(*argument.flags, **argument.keywords)
        if command.handler is not None:
            child.set_defaults(handler=command.handler, check=command.check)
        parsers[command.path] = child


def _examples(examples: Sequence[str], prog: str) -> str:
    heading = "example:" if len(examples) == 1 else "examples:"
    return "\n".join([heading, *(f"  {line.format(prog=prog)}" for line in examples)])


def resolve(name: str) -> Callable[..., Any]:
    """The function a table names as "module:function" in this package, imported now."""
    module, _, function = name.partition(":")
    found: Callable[..., Any] = getattr(
        importlib.import_module(f"{__package__}.{module}"), function
    )
    return found
