"""Every combination of choices bakes exactly the expected files, with no template left over."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pyspark_kafka_upgrade
import pytest
from conftest import (
    ALL_COMBINATIONS,
    BIN_DIR,
    CHOICE_FIELDS,
    CHOICES,
    TEMPLATE_DIR,
    clean_template,
    combination_id,
)
from pyspark_kafka_upgrade._domain.values import catalog

PACKAGE = "src/page_views_pipeline"
LIBRARY_VERSION = pyspark_kafka_upgrade.__version__

COMMON_FILES = {
    ".cookiecutter.json",
    ".github/dependabot.yml",
    ".github/workflows/ci.yml",
    ".gitignore",
    "Makefile",
    "README.md",
    "constraints-oldest.txt",
    "constraints.txt",
    "deploy/kubernetes/sparkapplication.yaml",
    "deploy/main.py",
    "deploy/submit.sh",
    "docs/DEPLOY.md",
    "docs/KAFKA_SECURITY.md",
    "docs/UPGRADE.md",
    "docs/upgrade-plan.png",
    "pipeline.toml",
    "pyproject.toml",
    f"{PACKAGE}/__init__.py",
    f"{PACKAGE}/__main__.py",
    f"{PACKAGE}/cli.py",
    f"{PACKAGE}/defaults.toml",
    f"{PACKAGE}/events.py",
    f"{PACKAGE}/pipeline.py",
    f"{PACKAGE}/py.typed",
    f"{PACKAGE}/query.py",
    "tests/integration/test_cluster_submit.py",
    "tests/integration/test_upgrade.py",
    "tests/samples.py",
    "tests/test_deploy_files.py",
    "tests/test_docs.py",
    "tests/test_events.py",
    "tests/test_query.py",
    "tests/test_signature.py",
    f"wheels/pyspark_kafka_upgrade-{LIBRARY_VERSION}-py3-none-any.whl",
}
# Every option is settings or dependencies now; only the Databricks bundle adds files
# (tests/test_databricks.py checks those).
FILES_PER_CHOICE: dict[tuple[str, str], set[str]] = {}
# "${{ ... }}" is a GitHub Actions expression, meant to survive baking.
TEMPLATE_LEFTOVER = re.compile(r"(?<!\$)\{\{|\{%|cookiecutter\.")


def expected_files(combination: dict[str, str]) -> set[str]:
    files = set(COMMON_FILES)
    for choice in combination.items():
        files |= FILES_PER_CHOICE.get(choice, set())
    return files


def generated_files(project: Path) -> set[str]:
    """Every file, the binary wheel included."""
    return {
        path.relative_to(project).as_posix()
        for path in project.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def text_files(project: Path) -> set[str]:
    """Every file a team reads and edits: all but the library's wheel and the pictures."""
    return {name for name in generated_files(project) if not name.endswith((".whl", ".png"))}


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_bakes_exactly_the_expected_files(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    assert project.name == "page-views-pipeline"
    assert generated_files(project) == expected_files(combination)


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_no_template_syntax_is_left(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    leftovers = [
        f"{name}: {match.group()!r}"
        for name in sorted(text_files(project))
        if name != ".cookiecutter.json"  # the answers file names its keys on purpose
        for match in TEMPLATE_LEFTOVER.finditer((project / name).read_text(encoding="utf-8"))
    ]
    assert leftovers == []


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_answers_are_recorded_in_replay_format(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    answers = json.loads((project / ".cookiecutter.json").read_text())["cookiecutter"]
    assert {field: answers[field] for field in CHOICE_FIELDS} == combination
    assert answers["package_name"] == "page_views_pipeline"
    assert not {"_output_dir", "_repo_dir", "_checkout"} & answers.keys()


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_choices_reach_the_generated_settings_and_dependencies(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    defaults = (project / PACKAGE / "defaults.toml").read_text()
    assert f'format = "{combination["sink_format"]}"' in defaults
    assert f'connector = "{combination["kafka_connector"]}"' in defaults
    assert f'store = "{combination["offset_store"]}"' in defaults
    # The library, pinned; with its Delta extra for that sink, its PostgreSQL one for that store.
    dependencies = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    extras = [
        extra
        for extra, chosen in (
            ("delta", combination["sink_format"] == "delta"),
            ("postgres", combination["offset_store"] == "postgres"),
        )
        if chosen
    ]
    listed = f"[{','.join(extras)}]" if extras else ""
    assert dependencies["dependencies"] == [f"pyspark-kafka-upgrade{listed}=={LIBRARY_VERSION}"]


def test_the_template_offers_exactly_the_formats_connectors_and_stores_the_library_lists() -> None:
    # One list each, in the library's catalog; cookiecutter.json must offer the same, in
    # order (its first choice is the default). The hooks read the catalog's file themselves.
    assert list(catalog.SINK_FORMATS) == CHOICES["sink_format"]
    assert list(catalog.CONNECTORS) == CHOICES["kafka_connector"]
    assert set(catalog.SOURCE_FORMATS) == set(catalog.CONNECTORS)
    assert list(catalog.STORE_NAMES) == CHOICES["offset_store"]
    assert list(catalog.STORES) == CHOICES["offset_store"]


def test_the_wheel_beside_the_project_is_the_library_it_pins(default_project: Path) -> None:
    [wheel] = (default_project / "wheels").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"pyspark_kafka_upgrade-{LIBRARY_VERSION}.dist-info/METADATA")
        names = set(archive.namelist())
    assert f"Version: {LIBRARY_VERSION}" in metadata.decode()
    # The library's own sources, as this checkout has them.
    catalog = "pyspark_kafka_upgrade/_domain/values/catalog.py"
    source = TEMPLATE_DIR / "library" / "src" / catalog
    assert catalog in names
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(catalog) == source.read_bytes()


def test_two_bakes_at_once_build_the_wheel_into_one_cache_entry(tmp_path: Path) -> None:
    # The template's suites bake in two workers at once; a team may too. Each bake builds in
    # a staging directory of its own and the first to finish is kept (it once raced).
    cache = tmp_path / "cache"
    bakes = [
        subprocess.Popen(
            [
                str(BIN_DIR / "cookiecutter"),
                str(clean_template()),
                "--no-input",
                "-o",
                str(tmp_path / f"out-{n}"),
            ],
            env={**os.environ, "XDG_CACHE_HOME": str(cache)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n in range(2)
    ]
    outputs = [bake.communicate(timeout=600)[0] for bake in bakes]
    assert [bake.returncode for bake in bakes] == [0, 0], outputs
    entries = sorted(
        path.name for path in (cache / "cookiecutter-pyspark-kafka-upgrade" / "wheels").iterdir()
    )
    assert len(entries) == 1 and ".partial" not in entries[0], entries
    wheels = [next((tmp_path / f"out-{n}").glob("*/wheels/*.whl")) for n in range(2)]
    assert wheels[0].name == wheels[1].name
    assert zipfile.ZipFile(wheels[0]).namelist() == zipfile.ZipFile(wheels[1]).namelist()


@pytest.mark.parametrize("module", ["events.py", "query.py"])
def test_the_default_project_is_the_librarys_reference_pipeline(
    default_project: Path, module: str
) -> None:
    # The library proves itself on its reference pipeline: the default bake must be it.
    example = TEMPLATE_DIR / "library" / "src" / "pyspark_kafka_upgrade" / "_example" / module
    baked = (default_project / PACKAGE / module).read_text()
    assert _code(baked) == _code(example.read_text())


def _code(source: str) -> str:
    """The module's code, its docstrings and comments left out."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            node.body = body[1:]  # type: ignore[attr-defined]
    return ast.dump(tree)


def test_a_team_owns_few_lines(default_project: Path) -> None:
    """The generated project is its pipeline: at most 3,000 lines, tests, deploy and docs
    included (the wheel is the library)."""
    lines = {
        name: len((default_project / name).read_text(encoding="utf-8").splitlines())
        for name in text_files(default_project)
    }
    total = sum(lines.values())
    print(f"the default project: {total} lines in {len(lines)} files")
    assert total <= 3000, sorted(lines.items(), key=lambda item: -item[1])[:10]
