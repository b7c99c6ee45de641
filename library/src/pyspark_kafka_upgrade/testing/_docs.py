"""The commands a project's docs show, for a test that holds the docs to the CLI.

A command is a line of a fenced code block that starts the pipeline's CLI: by its name
(``$ page_views_pipeline ...``, ``.venv/bin/page_views_pipeline ...``), as a module
(``python -m package ...``), or after ``--`` of ``deploy/submit.sh``. ``refusal`` parses one
with the real parser, so a renamed command or option in the docs fails a test.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade.cli._parser import build_parser

_FENCE = re.compile(r"^\s*```[^\n]*\n(.*?)^\s*```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class DocumentedCommand:
    """One command line of the docs, and the arguments it gives the CLI."""

    where: str  # "<file>: <the line>"
    arguments: tuple[str, ...]

    def __str__(self) -> str:
        return self.where


def documented_commands(
    docs: Iterable[Path], launchers: Collection[str], root: Path
) -> list[DocumentedCommand]:
    """Every command of the CLI that ``launchers`` (command or module names) start, in the
    code blocks of ``docs``; ``where`` names each file relative to ``root``."""
    found = []
    for doc in docs:
        for block in _FENCE.findall(doc.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                text = line.strip().removeprefix("$ ")
                try:
                    words = shlex.split(text, comments=True)
                except ValueError:
                    continue  # output, not a command
                arguments = _arguments(words, launchers)
                if arguments is not None:
                    where = f"{doc.relative_to(root)}: {text}"
                    found.append(DocumentedCommand(where, tuple(arguments)))
    return found


def refusal(project: Project, arguments: Sequence[str]) -> str | None:
    """None when the CLI accepts ``arguments``; else why not, in one line."""
    try:
        build_parser(project).parse_args(list(arguments))
    except SystemExit as stopped:
        # --help and --version stop with 0; a refusal with 2, argparse's message on stderr.
        if stopped.code != 0:
            return f"the CLI refuses it (exit {stopped.code})"
    return None


def _arguments(words: list[str], launchers: Collection[str]) -> list[str] | None:
    if words and Path(words[0]).name in launchers:
        return words[1:]
    if len(words) >= 3 and words[1] == "-m" and words[2] in launchers:
        return words[3:]
    if words and words[0].endswith("submit.sh") and "--" in words:
        return words[words.index("--") + 1 :]
    return None
