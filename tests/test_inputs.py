"""Bad answers are refused before anything is written; odd answers stay data, never code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import BIN_DIR, bake, clean_template, run_tool

COOKIECUTTER = str(BIN_DIR / "cookiecutter")

BAD_INPUTS = [
    ("package_name", "1views", "must be a lowercase Python identifier"),
    ("package_name", "page-views", "must be a lowercase Python identifier"),
    ("package_name", "class", "is a Python keyword"),
    ("package_name", "json", "would shadow the module of the same name"),
    ("package_name", "pyspark", "would shadow the module of the same name"),
    ("package_name", "pyarrow", "would shadow the module of the same name"),
    ("package_name", "support", "would shadow the module of the same name"),
    ("project_slug", "Page Views", "use lowercase letters, digits and single hyphens"),
    ("project_slug", "-views", "use lowercase letters, digits and single hyphens"),
    ("project_slug", "views--2", "use lowercase letters, digits and single hyphens"),
    ("kafka_topic", "page views", "may only contain ASCII letters, digits"),
    ("kafka_topic", "páginas", "may only contain ASCII letters, digits"),
    ("kafka_topic", ".", "is reserved"),
    ("kafka_topic", "..", "is reserved"),
    ("kafka_topic", "t" * 250, "must be 1 to 249 characters long"),
    ("window_duration", "10 minuts", "unknown unit 'minuts'"),
    ("window_duration", "ten minutes", "expected '<number> <unit>' pairs"),
    ("window_duration", "0 seconds", "must be positive"),
    ("window_duration", "1 month", "has no fixed length"),
    ("window_duration", "99999999999999999999 days", "longer than Spark can represent"),
    ("window_duration", "\u0661\u0660 minutes", "expected '<number> <unit>' pairs"),
    ("window_slide", "20 minutes", "is longer than the window '10 minutes'"),
    ("window_slide", "0 seconds", "must be positive"),
    ("watermark_delay", "-1 minute", "must not be negative"),
    ("watermark_delay", "soon", "expected '<number> <unit>' pairs"),
    ("author_email", "nobody", "is not an e-mail address"),
    ("project_name", "Page\tViews", "must be a single line without tabs"),
    ("description", "   ", "must not be empty"),
]


@pytest.mark.parametrize(
    ("field", "value", "rule"), BAD_INPUTS, ids=[f"{f}={v[:20]}" for f, v, _ in BAD_INPUTS]
)
def test_bad_input_is_refused_with_its_field_value_and_rule(
    tmp_path: Path, field: str, value: str, rule: str
) -> None:
    result = subprocess.run(
        [
            COOKIECUTTER,
            str(clean_template()),
            "--no-input",
            "-o",
            str(tmp_path),
            f"{field}={value}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    expected_line = f"ERROR: {field}={value!r}: "
    matching = [line for line in result.stderr.splitlines() if line.startswith(expected_line)]
    assert len(matching) == 1, result.stderr
    assert rule in matching[0]
    assert list(tmp_path.iterdir()) == [], "nothing may be generated from bad input"


def test_a_bad_slug_is_reported_once_not_again_through_the_derived_package(
    tmp_path: Path,
) -> None:
    command = [COOKIECUTTER, str(clean_template()), "--no-input", "-o", str(tmp_path)]
    result = subprocess.run(
        [*command, "project_slug=Page-Views"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]
    assert errors[0].startswith("ERROR: project_slug='Page-Views': ")
    assert not any(line.startswith("ERROR: package_name=") for line in errors)


def test_a_relative_template_path_bakes(tmp_path: Path) -> None:
    # `cookiecutter .` and `make bake` give the template as a relative path; the hooks run
    # from inside the new project and must still find the template's files.
    template = clean_template()
    run_tool(
        [COOKIECUTTER, template.name, "--no-input", "-o", str(tmp_path / "out")],
        cwd=template.parent,
    )
    assert (tmp_path / "out" / "page-views-pipeline" / "pyproject.toml").is_file()


# Loaded before anything else (as sitecustomize): any import of the library fails.
BLOCK_THE_LIBRARY = """
import sys

class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark_kafka_upgrade" or name.startswith("pyspark_kafka_upgrade."):
            raise ImportError(f"{name} imported while baking")
        return None

sys.meta_path.insert(0, _Blocked())
"""


@pytest.mark.parametrize(
    ("answers", "refused"),
    [([], False), (["kafka_topic=a b", "window_duration=soon"], True)],
    ids=["good", "bad"],
)
def test_the_hooks_check_answers_without_importing_the_library(
    tmp_path: Path, answers: list[str], refused: bool
) -> None:
    """The hooks check answers with the library's rules, read from its standard-library
    modules (values/validation.py and values/catalog.py) by path: the one source of the
    rules, usable before anything is installed."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCK_THE_LIBRARY)
    result = subprocess.run(
        [COOKIECUTTER, str(clean_template()), "--no-input", "-o", str(tmp_path / "out"), *answers],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(blocker)},
    )  # fmt: skip
    assert "imported while baking" not in result.stderr, result.stderr
    if refused:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]
        assert [line.split("=")[0] for line in errors] == [
            "ERROR: kafka_topic",
            "ERROR: window_duration",
        ], result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "out" / "page-views-pipeline" / "wheels").is_dir()


def test_every_broken_rule_is_reported_at_once(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            COOKIECUTTER, str(clean_template()), "--no-input", "-o", str(tmp_path),
            "package_name=class", "kafka_topic=a b", "watermark_delay=soon",
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]
    assert [line.split("=")[0] for line in errors[:3]] == [
        "ERROR: package_name",
        "ERROR: kafka_topic",
        "ERROR: watermark_delay",
    ]
    assert list(tmp_path.iterdir()) == []


TRICKY_NAME = 'O\'Brien "Views" {{ 7*7 }}'
TRICKY_DESCRIPTION = 'He said "hi" \\ {{ 7*7 }} {% raw %} \'\'\' """ $(id) `id` <b>&</b>'


def test_typed_answers_with_quotes_and_template_syntax_stay_data(tmp_path: Path) -> None:
    # Answers typed at the prompts reach the template unrendered; a rendered {{ 7*7 }}
    # would show up as 49 in the derived slug.
    prompts = [TRICKY_NAME, "", "", TRICKY_DESCRIPTION, "Team \"Q\" 'A'", *[""] * 9]
    result = subprocess.run(
        [COOKIECUTTER, str(clean_template()), "-o", str(tmp_path)],
        input="\n".join(prompts) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    project = tmp_path / "o-brien-views-7-7"
    assert project.is_dir(), sorted(p.name for p in tmp_path.iterdir())

    metadata = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert metadata["description"] == TRICKY_DESCRIPTION
    assert metadata["authors"] == [{"name": "Team \"Q\" 'A'", "email": "data-platform@example.com"}]
    assert TRICKY_NAME in (project / "README.md").read_text()
    answers = json.loads((project / ".cookiecutter.json").read_text())["cookiecutter"]
    assert answers["description"] == TRICKY_DESCRIPTION
    assert answers["package_name"] == "o_brien_views_7_7"

    # The project still works: its settings load and its CLI runs.
    run_tool(
        [sys.executable, "-m", "o_brien_views_7_7", "config", "show", "--json"],
        cwd=project,
        env={"PYTHONPATH": str(project / "src")},
    )


def test_quotes_and_backslashes_in_no_input_answers_stay_data(tmp_path: Path) -> None:
    description = "Quote \" apostrophe ' backslash \\ and a trailing backslash \\"
    project = bake(tmp_path, description=description, author_name="A \\ B")
    metadata = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert metadata["description"] == description
    assert metadata["authors"][0]["name"] == "A \\ B"


@pytest.mark.parametrize("text", ["Page views \U0001f4c8 per article", "Caf\u00e9 \x7f\x1b end"])
def test_any_unicode_in_free_text_keeps_the_toml_files_valid(tmp_path: Path, text: str) -> None:
    project = bake(tmp_path, description=text, author_name=text)
    metadata = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert metadata["description"] == text
    assert metadata["authors"][0]["name"] == text


def test_replaying_the_recorded_answers_regenerates_the_same_project(tmp_path: Path) -> None:
    first = bake(tmp_path / "first", offset_store="postgres", window_slide="5 minutes")
    replayed = tmp_path / "replayed"
    run_tool(
        [
            COOKIECUTTER, str(clean_template()), "-o", str(replayed),
            "--replay-file", str(first / ".cookiecutter.json"),
        ],
        cwd=tmp_path,
    )  # fmt: skip
    second = replayed / first.name
    first_files = {p.relative_to(first): p.read_bytes() for p in first.rglob("*") if p.is_file()}
    second_files = {p.relative_to(second): p.read_bytes() for p in second.rglob("*") if p.is_file()}
    assert first_files == second_files
