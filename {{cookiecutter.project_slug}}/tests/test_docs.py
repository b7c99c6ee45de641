"""Every command the docs show is one this CLI accepts: README.md and docs/*.md, parsed with
the real parser, so that no renamed command or option lingers in them. (The upgrade guide's
walkthrough also runs for real: the library's demo plays it, and its test checks that every
`$` command of docs/UPGRADE.md is one the demo ran.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from pyspark_kafka_upgrade.cli import build_parser

from {{ cookiecutter.package_name }}.pipeline import PROJECT

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```[^\n]*\n(.*?)^\s*```", re.MULTILINE | re.DOTALL)


def documented_commands() -> list[tuple[str, list[str]]]:
    """(where, arguments) of every line of a code block that runs this pipeline's CLI:
    directly, through .venv/bin, or after `--` of deploy/submit.sh."""
    found = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                text = line.strip().removeprefix("$ ")
                try:
                    words = shlex.split(text, comments=True)
                except ValueError:
                    continue  # output, not a command
                if not words:
                    continue
                if Path(words[0]).name == PROJECT.command:
                    arguments = words[1:]
                elif words[0].endswith("submit.sh") and "--" in words:
                    arguments = words[words.index("--") + 1 :]
                else:
                    continue
                found.append((f"{doc.relative_to(ROOT)}: {text}", arguments))
    return found


def test_the_docs_show_the_commands_a_team_runs() -> None:
    shown = {" ".join(arguments[:2]) for _, arguments in documented_commands()}
    for command in ("upgrade plan", "upgrade apply", "run", "verify"):
        assert any(command in each for each in shown), command


@pytest.mark.parametrize(("where", "arguments"), documented_commands(), ids=lambda v: str(v)[:80])
def test_every_documented_command_parses(where: str, arguments: list[str]) -> None:
    parser = build_parser(PROJECT)
    try:
        parser.parse_args(arguments)
    except SystemExit as stopped:
        # --help and --version stop with 0; a refusal with 2.
        if stopped.code != 0:
            pytest.fail(f"{where}: the CLI refuses it (exit {stopped.code})")
