"""Each baked project passes its own checks.

The default combination runs its full `make test` in a virtualenv of its own, exactly as a
user would. The other combinations share this environment's tools: lint, mypy --strict, the
import layers, an import of every module, and the offset store contract tests for the store
they chose.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    ALL_COMBINATIONS,
    BIN_DIR,
    CHOICE_FIELDS,
    DEFAULT_COMBINATION,
    GENERATED_PROJECT_REPORT,
    bake,
    combination_id,
    run_tool,
)

PACKAGE = "page_views_pipeline"
NON_DEFAULT = [c for c in ALL_COMBINATIONS if c != DEFAULT_COMBINATION]


def working_copy(project: Path, tmp_path: Path) -> Path:
    """Run tools on a copy: the baked originals stay as generated for the file-list tests."""
    return Path(shutil.copytree(project, tmp_path / project.name))


@pytest.fixture(scope="module")
def default_working_copy(
    baked_projects: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """One copy of the default project for both connector runs: one virtualenv, made once."""
    return working_copy(
        baked_projects[combination_id(DEFAULT_COMBINATION)], tmp_path_factory.mktemp("default")
    )


# The whole suite (lint, unit, integration) on Spark's built-in connector, then the
# integration suite again on the pip-only source: the unit tests read no Kafka, so they would
# only repeat themselves.
CONNECTOR_RUNS = [("builtin", "test"), ("python", "integration")]
REPORT = "-rfEsxXp"
PARITY_TEST = "tests/integration/test_builtin_connector.py::test_both_connectors_read_identical"
# The packaged job on a real standalone cluster: CI must run it on each connector.
CLUSTER_TEST = (
    "tests/integration/test_cluster_submit.py::"
    "test_version_1_then_the_upgrade_then_version_2_on_a_standalone_cluster"
)
# The slowest tests' wall times, in the log: the cluster test's among them.
DURATIONS = "--durations=8"


@pytest.mark.parametrize(
    ("connector", "target"), CONNECTOR_RUNS, ids=[c for c, _ in CONNECTOR_RUNS]
)
def test_default_project_passes_its_own_suite_on_each_connector(
    default_working_copy: Path, connector: str, target: str
) -> None:
    # Every test's outcome, one line each (not -rA: that also prints what passing tests
    # captured, inner pytest runs included): the log shows which ran; the checks read it.
    result = run_tool(
        ["make", target],
        cwd=default_working_copy,
        # Apache Kafka even where Docker would make auto pick Testcontainers: this run
        # proves the upgrade on the broker teams run.
        env={
            "KAFKA_CONNECTOR": connector,
            "KAFKA_BACKEND": "apache",
            "PYTEST_ADDOPTS": f"{REPORT} {DURATIONS}",
        },
        timeout=3000,
    )
    lines = report_generated_run(f"[{connector}]", result.stdout)
    headers = [line for line in lines if line.startswith(("kafka backend: ", "kafka connector: "))]
    assert any(line.startswith("kafka backend: ") for line in headers), "no Kafka backend named"
    assert f"kafka connector: {connector}" in "\n".join(headers), headers
    assert any(line.startswith(f"PASSED {PARITY_TEST}") for line in lines), (
        "the test that both connectors read identical DataFrames did not pass"
    )
    assert any(line.startswith(f"PASSED {CLUSTER_TEST}") for line in lines), (
        "the upgrade on a standalone cluster did not pass"
    )
    if os.environ.get("CI"):
        # Nothing may skip in CI: every skip would hide a core test.
        assert [line for line in lines if line.startswith("SKIPPED")] == []
        # CI machines have Java and Maven: the suite must run on real Apache Kafka 4.x.
        assert "Apache Kafka 4." in "\n".join(headers), headers


def report_generated_run(label: str, stdout: str) -> list[str]:
    """The run's lines; its headers, key results, summary and wall times go to the report."""
    lines = stdout.splitlines()
    shown = [
        line
        for line in lines
        if line.startswith(("kafka backend: ", "kafka connector: "))
        or line.startswith((f"PASSED {PARITY_TEST}", f"PASSED {CLUSTER_TEST}"))
        or (line.startswith("=") and " passed" in line)
        or (" call " in line and "tests/integration/" in line and line.split()[0].endswith("s"))
    ]
    GENERATED_PROJECT_REPORT.extend(f"{label} {line}" for line in dict.fromkeys(shown))
    return lines


# The oldest Spark the project supports, as the platforms run it (Databricks 17.3 LTS is
# Spark 4.0.0): the integration suite on the built-in connector, in a virtualenv of its own.
OLDEST = "constraints-oldest.txt"


def test_default_project_passes_its_integration_suite_on_the_oldest_spark(
    default_working_copy: Path,
) -> None:
    pins = dict(
        line.split("==", 1)
        for line in (default_working_copy / OLDEST).read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    result = run_tool(
        ["make", "integration", "VENV=.venv-oldest", f"CONSTRAINTS={OLDEST}"],
        cwd=default_working_copy,
        env={
            "KAFKA_CONNECTOR": "builtin",
            "KAFKA_BACKEND": "apache",
            "PYTEST_ADDOPTS": f"{REPORT} {DURATIONS}",
        },
        timeout=3000,
    )
    lines = report_generated_run(f"[builtin, Spark {pins['pyspark']}]", result.stdout)
    assert f"Spark {pins['pyspark']}, master local[1])" in result.stdout
    assert any(line.startswith(f"PASSED {CLUSTER_TEST}") for line in lines)
    if os.environ.get("CI"):
        assert [line for line in lines if line.startswith("SKIPPED")] == []
        assert "Apache Kafka 4." in result.stdout


@pytest.mark.parametrize("combination", NON_DEFAULT, ids=combination_id)
def test_project_lints_type_checks_and_imports(
    baked_projects: dict[str, Path],
    combination: dict[str, str],
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    project = working_copy(baked_projects[combination_id(combination)], tmp_path)
    # One mypy cache for all combinations: pyspark's stubs are analysed once.
    cache = tmp_path_factory.getbasetemp() / "mypy-cache"
    run_tool([str(BIN_DIR / "ruff"), "check", "."], cwd=project)
    run_tool([str(BIN_DIR / "ruff"), "format", "--check", "."], cwd=project)
    run_tool([str(BIN_DIR / "mypy"), "--cache-dir", str(cache)], cwd=project)
    # The layers hold whichever modules the options kept.
    lint_imports = [str(BIN_DIR / "lint-imports"), "--no-cache"]
    run_tool(lint_imports, cwd=project, env={"PYTHONPATH": "src"})
    modules = sorted(
        ".".join(path.relative_to(project / "src").with_suffix("").parts)
        for path in (project / "src" / PACKAGE).rglob("*.py")
        if path.name != "__main__.py"
    )
    script = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)"
    run_tool([sys.executable, "-c", script, *modules], cwd=project, env={"PYTHONPATH": "src"})


def test_imports_sort_the_same_whatever_the_package_is_called(tmp_path: Path) -> None:
    # ruff's import order puts the package among the first-party modules by name; a package
    # that sorts after "support" (the tests' helpers) must lint as cleanly as the default.
    project = bake(tmp_path, package_name="zz_views")
    run_tool([str(BIN_DIR / "ruff"), "check", "--no-cache", "."], cwd=project)
    run_tool([str(BIN_DIR / "ruff"), "format", "--no-cache", "--check", "."], cwd=project)
    # The import contracts name the package: they must follow its name.
    run_tool([str(BIN_DIR / "lint-imports"), "--no-cache"], cwd=project, env={"PYTHONPATH": "src"})


def run_generated_tests(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Some of a baked project's own tests, with this environment's tools."""
    return run_tool(
        [str(BIN_DIR / "pytest"), "-p", "no:cacheprovider", *args],
        cwd=project,
        env={"PYTHONPATH": os.pathsep.join(["src", "tests"])},
    )


def varying(field: str) -> list[dict[str, str]]:
    """The combinations that differ from the default in ``field`` alone, the default first."""
    return [
        c
        for c in ALL_COMBINATIONS
        if all(c[other] == DEFAULT_COMBINATION[other] for other in CHOICE_FIELDS if other != field)
    ]


STORE_COMBINATIONS = [c for c in varying("offset_store") if c != DEFAULT_COMBINATION]


@pytest.mark.parametrize("combination", STORE_COMBINATIONS, ids=combination_id)
def test_chosen_offset_store_passes_the_contract_tests(
    baked_projects: dict[str, Path], combination: dict[str, str], tmp_path: Path
) -> None:
    project = working_copy(baked_projects[combination_id(combination)], tmp_path)
    result = run_generated_tests(project, "tests/contract", "-v")
    assert f"[{combination['offset_store']}" in result.stdout
    if os.environ.get("CI"):
        # Where CI runs, PostgreSQL is there: a skipped store test would hide a failure.
        assert " skipped" not in result.stdout, result.stdout


CONNECTOR_COMBINATIONS = varying("kafka_connector")


@pytest.mark.parametrize("combination", CONNECTOR_COMBINATIONS, ids=combination_id)
def test_the_deployment_files_are_valid_and_agree_for_each_connector(
    baked_projects: dict[str, Path], combination: dict[str, str], tmp_path: Path
) -> None:
    # The manifest asks for the connector's package only when the project's connector is
    # the built-in one: each rendering is checked, not only the default's.
    project = working_copy(baked_projects[combination_id(combination)], tmp_path)
    result = run_generated_tests(project, "tests/unit/test_deploy_files.py")
    assert " passed" in result.stdout and " failed" not in result.stdout, result.stdout
    manifest = (project / "deploy" / "kubernetes" / "sparkapplication.yaml").read_text()
    assert ("spark-sql-kafka-0-10_2.13" in manifest) == (
        combination["kafka_connector"] == "builtin"
    )
