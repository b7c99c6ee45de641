"""Every command the library's docs show is one the CLI accepts, parsed with the real parser
(the reference pipeline's, which the docs use): no renamed command or option lingers.

The docs of the template around the library (its README and docs/) are held to the same
rule. The upgrade guide's walkthrough runs for real in ``tests/integration/test_demo.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._docs import (
    DocumentedCommand,
    documented_commands,
    refusal,
)

LIBRARY = Path(__file__).resolve().parents[2]
TEMPLATE = LIBRARY.parent
DOCS = [
    LIBRARY / "README.md",
    *sorted((LIBRARY / "docs").glob("*.md")),
    TEMPLATE / "README.md",
    *sorted((TEMPLATE / "docs").glob("*.md")),
]
COMMANDS = documented_commands(
    [doc for doc in DOCS if doc.is_file()],
    {PROJECT.command, "pyspark_kafka_upgrade._example"},
    TEMPLATE,
)


def test_the_docs_show_the_commands_a_team_runs() -> None:
    shown = {" ".join(command.arguments[:2]) for command in COMMANDS}
    for command in ("upgrade plan", "upgrade apply", "upgrade show", "run", "verify"):
        assert any(command in each for each in shown), (command, sorted(shown))


def test_a_renamed_option_is_refused() -> None:
    # The check can fail: an option the CLI does not have.
    assert refusal(PROJECT, ["upgrade", "plan", "--output", "plan.json"]) is not None
    assert refusal(PROJECT, ["upgrade", "plan", "--out", "plan.json"]) is None
    assert refusal(PROJECT, ["--help"]) is None


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: str(command)[:90])
def test_every_documented_command_parses(command: DocumentedCommand) -> None:
    assert refusal(PROJECT, command.arguments) is None, command.where
