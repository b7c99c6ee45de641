"""Every command the library's docs show is one the CLI accepts, parsed with the real parser
(the reference pipeline's, which the docs use): no renamed command or option lingers.

The docs of the template around the library (its README and docs/) are held to the same
rule. The upgrade guide's walkthrough runs for real in ``tests/integration/test_demo.py``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pyspark_kafka_upgrade.cli import build_parser
from pyspark_kafka_upgrade.example.pipeline import PROJECT

LIBRARY = Path(__file__).resolve().parents[2]
TEMPLATE = LIBRARY.parent
DOCS = [
    LIBRARY / "README.md",
    *sorted((LIBRARY / "docs").glob("*.md")),
    TEMPLATE / "README.md",
    *sorted((TEMPLATE / "docs").glob("*.md")),
]
FENCE = re.compile(r"^\s*```[^\n]*\n(.*?)^\s*```", re.MULTILINE | re.DOTALL)
# How the docs start the reference pipeline's CLI.
LAUNCHERS = {PROJECT.command, "pyspark_kafka_upgrade.example"}


def documented_commands() -> list[tuple[str, list[str]]]:
    found = []
    for doc in (doc for doc in DOCS if doc.is_file()):
        for block in FENCE.findall(doc.read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                text = line.strip().removeprefix("$ ")
                try:
                    words = shlex.split(text, comments=True)
                except ValueError:
                    continue  # output, not a command
                arguments = _arguments(words)
                if arguments is not None:
                    found.append((f"{doc.relative_to(TEMPLATE)}: {text}", arguments))
    return found


def _arguments(words: list[str]) -> list[str] | None:
    if words and Path(words[0]).name in LAUNCHERS:
        return words[1:]
    if words[:2] and words[1:2] == ["-m"] and words[2:3] and words[2] in LAUNCHERS:
        return words[3:]
    if words and words[0].endswith("submit.sh") and "--" in words:
        return words[words.index("--") + 1 :]
    return None


def test_the_docs_show_the_commands_a_team_runs() -> None:
    shown = {" ".join(arguments[:2]) for _, arguments in documented_commands()}
    for command in ("upgrade plan", "upgrade apply", "upgrade show", "run", "verify"):
        assert any(command in each for each in shown), (command, sorted(shown))


@pytest.mark.parametrize(("where", "arguments"), documented_commands(), ids=lambda v: str(v)[:90])
def test_every_documented_command_parses(where: str, arguments: list[str]) -> None:
    try:
        build_parser(PROJECT).parse_args(arguments)
    except SystemExit as stopped:
        # --help and --version stop with 0; a refusal with 2.
        if stopped.code != 0:
            pytest.fail(f"{where}: the CLI refuses it (exit {stopped.code})")
