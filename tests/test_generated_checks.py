"""Each baked project passes its own checks, against the library it pins.

The default project, and one with every answer changed, each run their full `make test` in a
virtualenv of their own, exactly as a user would: the library comes from the wheel the bake
put beside them. The default project's runs on a Kafka container (Testcontainers), the
other's (a project on a Delta table) on Apache Kafka as a local process, each on its own
connector. A Delta project runs its `make test` again on the oldest Spark, but for the
cluster tests, which the other two runs hold (the SIGTERM one the default's only).
The other combinations share this environment's tools: lint, mypy --strict, the import
layers, an import of every module, and the deployment files' tests.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import (
    ALL_COMBINATIONS,
    BIN_DIR,
    CHOICE_FIELDS,
    DEFAULT_COMBINATION,
    TEMPLATE_DIR,
    bake,
    check_container_header,
    check_suite_run,
    combination_id,
    run_tool,
)
from pyspark_kafka_upgrade._adapters.spark.delta_jars import (
    DELTA_FOR_SPARK,
    DELTA_SESSION_CONF,
    delta_package,
)

PACKAGE = "page_views_pipeline"
NON_DEFAULT = [c for c in ALL_COMBINATIONS if c != DEFAULT_COMBINATION]
# Every answer other than the default: another name, topic, window, sink, store, connector.
# The sink is the Delta table (orc, the other file format, is the library's file sink, which
# its sink contract tests and the lint-level combinations below cover).
OTHER_ANSWERS = {
    "project_name": "Ad Clicks",
    "package_name": "ad_clicks",
    "kafka_topic": "ad.clicks-v2",
    "window_duration": "1 hour",
    "window_slide": "15 minutes",
    "watermark_delay": "20 minutes",
    "sink_format": "delta",
    "offset_store": "postgres",
    "kafka_connector": "builtin",
}
REPORT = "-rfEsxXp"
CLUSTER_TEST = (
    "tests/integration/test_cluster_submit.py::"
    "test_an_upgrade_on_the_cluster_loses_nothing_and_writes_nothing_twice"
)
PROOF_TEST = (
    "tests/integration/test_upgrade.py::test_an_upgrade_loses_no_event_and_writes_no_window_twice"
)
SIGTERM_TEST = (
    "tests/integration/test_cluster_submit.py::"
    "test_sigterm_to_submit_sh_lets_the_batch_in_flight_commit"
)
# The slowest tests' wall times, in the log: the cluster test's among them.
DURATIONS = "--durations=8"


def working_copy(project: Path, tmp_path: Path) -> Path:
    """Run tools on a copy: the baked originals stay as generated for the file-list tests."""
    return Path(shutil.copytree(project, tmp_path / project.name))


def make_test(
    project: Path,
    label: str,
    connector: str,
    backend: str,
    *make_args: str,
    left_out: tuple[str, ...] = (),
) -> list[str]:
    """The project's own `make test` on ``backend``, without the tests ``left_out``; its
    report lines."""
    # Every test's outcome, one line each (not -rA: that also prints what passing tests
    # captured): the log shows which ran; the checks read it.
    deselect = " ".join(f"--deselect={test}" for test in left_out)
    result = run_tool(
        ["make", "test", *make_args],
        cwd=project,
        env={"KAFKA_BACKEND": backend, "PYTEST_ADDOPTS": f"{REPORT} {DURATIONS} {deselect}"},
        timeout=2400,
    )
    required = tuple(test for test in (PROOF_TEST, CLUSTER_TEST) if test not in left_out)
    lines = check_suite_run(label, result.stdout, connector, required)
    ran = [line for line in lines if line.startswith(tuple(f"PASSED {t}" for t in left_out))]
    assert not ran, ran
    return lines


@pytest.mark.xdist_group("other suites")
def test_the_default_project_passes_its_own_make_test_on_a_kafka_container(
    baked_projects: dict[str, Path], tmp_path: Path, kafka_image: str
) -> None:
    # Testcontainers, as auto picks it wherever Docker answers: the default image, which CI
    # builds locally under the official name, so the code path is the one users run.
    project = working_copy(baked_projects[combination_id(DEFAULT_COMBINATION)], tmp_path)
    lines = make_test(
        project, "[default]", DEFAULT_COMBINATION["kafka_connector"], "testcontainers"
    )
    check_container_header(lines, kafka_image)


# Beside the library's integration suite, in its worker (tests/test_library.py says why).
@pytest.mark.xdist_group("library")
def test_a_project_with_every_answer_changed_passes_its_own_make_test(tmp_path: Path) -> None:
    # Apache Kafka as a local process, with the other connector: the broker teams run.
    project = bake(tmp_path / "baked", **OTHER_ANSWERS)
    # A SIGTERM reaches the driver through submit.sh alike whatever the sink and connector:
    # the default project's run proves it (CI's 30 minutes).
    lines = make_test(
        project,
        "[other answers]",
        OTHER_ANSWERS["kafka_connector"],
        "apache",
        left_out=(SIGTERM_TEST,),
    )
    assert any(line.startswith("PASSED tests/test_signature.py::") for line in lines)


# The oldest Spark the projects support (Databricks 17.3 LTS is Spark 4.0.0) is proven in
# this CI by the library's proofs on it (tests/test_library.py), which hold for a project
# only if the project pins what the library was proven with. A project's own workflow runs
# its integration suite on it too (.github/workflows/ci.yml). Of the library's proofs there,
# one writes a Delta table, whose build differs per Spark line: a Delta project runs its own
# `make test` on it below.
OLDEST = "constraints-oldest.txt"
# The delta extra's packages: pinned in a project only where it installs them.
DELTA_PINS = {"deltalake", "arro3-core", "Deprecated", "wrapt"}


def pins(path: Path) -> dict[str, str]:
    return dict(
        line.split("==", 1)
        for line in path.read_text().splitlines()
        if "==" in line and not line.startswith(("#", "{"))
    )


def without_delta(pinned: dict[str, str]) -> dict[str, str]:
    return {name: version for name, version in pinned.items() if name not in DELTA_PINS}


# Beside the library's integration suite, in its worker: Delta's build for Spark 4.0 is
# another artifact than 4.2's, which the other answers' project runs on.
@pytest.mark.xdist_group("library")
def test_a_delta_project_passes_its_own_make_test_on_the_oldest_spark(tmp_path: Path) -> None:
    project = bake(tmp_path / "baked", sink_format="delta", kafka_connector="builtin")
    oldest = pins(project / OLDEST)["pyspark"]
    lines = make_test(
        project,
        f"[delta, Spark {oldest}]",
        "builtin",
        "apache",
        "VENV=.venv-oldest",
        f"CONSTRAINTS={OLDEST}",
        # Delta's build for Spark 4.0 is proven here by the project's upgrade on the table;
        # submit.sh asks a cluster for that same build (test_submit_sh_and_the_manifest_...
        # below), and the cluster tests run at Spark 4.2 in the two runs above (CI's 30
        # minutes: about four of them here). The project's own workflow runs them on both.
        left_out=(CLUSTER_TEST, SIGTERM_TEST),
    )
    assert any(f"Spark {oldest}, master local[1])" in line for line in lines), lines[:20]


def test_a_project_pins_the_oldest_versions_the_librarys_proofs_ran_on(
    baked_projects: dict[str, Path],
) -> None:
    library = without_delta(pins(TEMPLATE_DIR / "library" / OLDEST))
    for project in baked_projects.values():
        assert without_delta(pins(project / OLDEST)) == library, project.name


@pytest.mark.parametrize("constraints", ["constraints.txt", OLDEST])
def test_a_delta_project_pins_the_delta_extra_as_the_library_does_and_no_other_project_does(
    baked_projects: dict[str, Path], constraints: str
) -> None:
    library = pins(TEMPLATE_DIR / "library" / constraints)
    assert set(library) >= DELTA_PINS, "the delta extra's packages moved: update DELTA_PINS"
    delta = {name: library[name] for name in DELTA_PINS}
    for name, project in baked_projects.items():
        pinned = {k: v for k, v in pins(project / constraints).items() if k in DELTA_PINS}
        answers = json.loads((project / ".cookiecutter.json").read_text())["cookiecutter"]
        assert pinned == (delta if answers["sink_format"] == "delta" else {}), name


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


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # the events and the query know nothing of each other
        (f"src/{PACKAGE}/events.py", "from page_views_pipeline import query", "Layers"),
        # nothing below the entry points imports them
        (f"src/{PACKAGE}/query.py", "from page_views_pipeline import cli", "Layers"),
        # the library only through its public API: the package, its tests and deploy/
        (
            f"src/{PACKAGE}/query.py",
            "from pyspark_kafka_upgrade._adapters.spark import parsing",
            "public API only",
        ),
        (
            "tests/test_query.py",
            "from pyspark_kafka_upgrade._domain.values.clock import now_ms",
            "public API only",
        ),
        ("deploy/main.py", "import pyspark_kafka_upgrade.testing.plugin", "public API only"),
    ],
    ids=["siblings", "upward", "deep-import", "deep-import-in-tests", "testing-internals"],
)
def test_the_projects_import_contracts_fail_on_a_forbidden_import(
    default_project: Path, tmp_path: Path, module: str, line: str, broken: str
) -> None:
    project = working_copy(default_project, tmp_path)
    target = project / module
    target.write_text(target.read_text() + f"\n{line}  # noqa: E402, F401\n")
    result = subprocess.run(
        [str(BIN_DIR / "lint-imports"), "--no-cache"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": "src"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout
    assert any(broken in row and "BROKEN" in row for row in result.stdout.splitlines()), (
        result.stdout
    )


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


CONNECTOR_COMBINATIONS = varying("kafka_connector")


@pytest.mark.parametrize("combination", CONNECTOR_COMBINATIONS, ids=combination_id)
def test_the_deployment_files_are_valid_and_agree_for_each_connector(
    baked_projects: dict[str, Path], combination: dict[str, str], tmp_path: Path
) -> None:
    # The manifest asks for the connector's package only when the project's connector is
    # the built-in one: each rendering is checked, not only the default's.
    project = working_copy(baked_projects[combination_id(combination)], tmp_path)
    result = run_generated_tests(project, "tests/test_deploy_files.py")
    assert " passed" in result.stdout and " failed" not in result.stdout, result.stdout
    manifest = (project / "deploy" / "kubernetes" / "sparkapplication.yaml").read_text()
    assert ("spark-sql-kafka-0-10_2.13" in manifest) == (
        combination["kafka_connector"] == "builtin"
    )


def test_submit_sh_and_the_manifest_ask_for_the_delta_build_the_library_picks(
    baked_projects: dict[str, Path], tmp_path: Path
) -> None:
    # deploy/ is shell and YAML, which cannot import the library's table of Delta builds:
    # each Spark line it knows is asked of submit.sh here, and the manifest's Spark too.
    project = baked_projects[combination_id({**DEFAULT_COMBINATION, "sink_format": "delta"})]
    dist = tmp_path / "dist"
    dist.mkdir()
    for name in ("main.py", "environment.tar.gz"):
        (dist / name).write_bytes(b"")
    fake_submit = tmp_path / "spark-submit"
    fake_submit.write_text("#!/bin/sh\nexit 99\n")
    fake_submit.chmod(0o755)
    for line, package in DELTA_FOR_SPARK.items():
        done = run_tool(
            [str(project / "deploy" / "submit.sh"), "--dry-run", "--master=yarn"],
            cwd=tmp_path,
            env={"DIST_DIR": str(dist), "SPARK_SUBMIT": str(fake_submit),
                 "SPARK_VERSION": f"{line}.3", "SPARK_DELTA_JARS": ""},
        )  # fmt: skip
        words = shlex.split(done.stdout)
        assert words[words.index("--packages") + 1] == package, (line, words)
        confs = [words[i + 1] for i, word in enumerate(words) if word == "--conf"]
        assert {f"{key}={value}" for key, value in DELTA_SESSION_CONF.items()} <= set(confs)
    spec = yaml.safe_load((project / "deploy/kubernetes/sparkapplication.yaml").read_text())["spec"]
    assert spec["deps"]["packages"] == [delta_package(spec["sparkVersion"])]
    assert DELTA_SESSION_CONF.items() <= spec["sparkConf"].items()
