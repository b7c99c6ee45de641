"""The command table: the package's own loads and names real handlers; a broken one is
refused in a line that names the command, before any parser is built."""

from __future__ import annotations

import argparse
import re
import tomllib
from importlib import resources
from typing import Any

import pytest

from pyspark_kafka_upgrade.cli import _table
from pyspark_kafka_upgrade.cli._table import CommandTableError, parse
from pyspark_kafka_upgrade.cli._usage import positive_int


def test_every_command_of_the_package_s_table_runs_a_function_that_exists() -> None:
    table = _table.load()
    paths = {command.path for command in table.commands}
    leaves = [command for command in table.commands if command.handler is not None]
    # A group holds subcommands and runs nothing; every other command runs its handler.
    groups = {command.path[:-1] for command in table.commands} - {()}
    assert {command.path for command in leaves} == paths - groups
    for command in leaves:
        assert command.handler is not None
        assert callable(_table.resolve(command.handler)), command.path
        if command.check is not None:
            assert callable(_table.resolve(command.check)), command.path


def _document(**command: Any) -> dict[str, Any]:
    base = {"path": "show", "help": "h", "description": "d", "examples": ["{prog} show"]}
    return {
        "program": {"description": "p", "epilog": "e"},
        "common": {"json": {"flags": ["--json"], "action": "store_true"}},
        "command": [{**base, **command}],
    }


def test_a_minimal_table_builds_a_parser_with_its_common_argument_and_its_type() -> None:
    table = parse(
        _document(
            handler="_config:show",
            argument=[
                {"common": "json", "help": "print it as JSON"},
                {"flags": ["--generation"], "type": "generation", "metavar": "N"},
            ],
        )
    )
    parser = argparse.ArgumentParser(prog="prog")
    _table.build(parser, table, "prog")
    args = parser.parse_args(["show", "--json", "--generation", "2"])
    assert (args.json, args.generation, args.handler) == (True, 2, "_config:show")
    [command] = table.commands
    assert command.arguments[1].keywords["type"] is positive_int


@pytest.mark.parametrize(
    ("command", "refusal"),
    [
        ({"hepl": "typo"}, "show: unknown keys ['hepl']"),
        ({"examples": []}, "show: every command's --help ends with an example"),
        ({"handler": "_config.show"}, "show: handler '_config.show' is not module:function"),
        ({"argument": [{"common": "jsno"}]}, "show: no common argument 'jsno'"),
        ({"argument": [{"flags": ["--n"], "type": "float"}]}, "show --n: no argument type"),
        ({"argument": [{"help": "no flags"}]}, "show: an argument without flags"),
        ({"argument": [{"flags": ["--n"], "choices": [1]}]}, "show --n: unknown keys ['choices']"),
        ({"path": "upgrade plan"}, "upgrade plan: its parent command comes later"),
    ],
)
def test_a_broken_table_is_refused_naming_the_command(
    command: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(CommandTableError, match=f"^{re.escape(refusal)}"):
        parse(_document(**command))


def test_the_table_is_valid_toml_that_parse_reads_the_same_as_load() -> None:
    text = (resources.files(_table.__package__) / _table.TABLE).read_text()
    assert parse(tomllib.loads(text)) == _table.load()
