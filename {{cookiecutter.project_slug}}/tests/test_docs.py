"""Every command the docs show is one this CLI accepts: README.md and docs/*.md, parsed with
the real parser, so that no renamed command or option lingers in them. (The upgrade guide's
walkthrough also runs for real: the library's demo plays it, and its test checks that every
`$` command of docs/UPGRADE.md is one the demo ran.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark_kafka_upgrade.testing import DocumentedCommand, documented_commands, refusal

from {{ cookiecutter.package_name }}.pipeline import PROJECT

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = documented_commands(
    [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], {PROJECT.command}, ROOT
)


def test_the_docs_show_the_commands_a_team_runs() -> None:
    shown = {" ".join(command.arguments[:2]) for command in COMMANDS}
    for command in ("upgrade plan", "upgrade apply", "run", "verify"):
        assert any(command in each for each in shown), command


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: str(command)[:80])
def test_every_documented_command_parses(command: DocumentedCommand) -> None:
    assert refusal(PROJECT, command.arguments) is None, command.where
