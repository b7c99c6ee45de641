"""Shared helpers for the template's self-tests: bake projects and run tools inside them."""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from cookiecutter.main import cookiecutter

TEMPLATE_DIR = Path(__file__).resolve().parents[1]
CHOICE_FIELDS = ("sink_format", "kafka_connector", "offset_store")
CHOICES: dict[str, list[str]] = {
    field: json.loads((TEMPLATE_DIR / "cookiecutter.json").read_text())[field]
    for field in CHOICE_FIELDS
}
DEFAULT_COMBINATION: dict[str, str] = {field: values[0] for field, values in CHOICES.items()}
ALL_COMBINATIONS: list[dict[str, str]] = [
    dict(zip(CHOICE_FIELDS, values, strict=True))
    for values in itertools.product(*(CHOICES[field] for field in CHOICE_FIELDS))
]
BIN_DIR = Path(sys.executable).parent
# What tools leave behind when run inside the template; cookiecutter would bake it too.
WORKING_DEBRIS = (
    ".venv",
    ".venv-*",
    "build",
    "dist",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".import_linter_cache",
    "artifacts",
    "spark-warehouse",
)


# Lines from the inner suites' runs (the library's, the projects'), repeated at the end of
# this run's report. `make test` runs the suites in two pytest-xdist workers, whose reports
# the controller does not print: each process appends its lines to a file of its own in one
# directory, which the controller creates and reads.
INNER_RUNS_ENV_VAR = "TEMPLATE_INNER_RUNS_DIR"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        os.environ[INNER_RUNS_ENV_VAR] = tempfile.mkdtemp(prefix="template-inner-runs-")


def report_inner_run(lines: Iterator[str] | Sequence[str]) -> None:
    directory = Path(os.environ[INNER_RUNS_ENV_VAR])
    with (directory / f"{os.getpid()}.txt").open("a", encoding="utf-8") as report:
        report.writelines(f"{line}\n" for line in lines)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if hasattr(terminalreporter.config, "workerinput"):
        return
    directory = Path(os.environ[INNER_RUNS_ENV_VAR])
    lines = [
        line
        for path in sorted(directory.glob("*.txt"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    # Each worker waits for the Kafka image, and reports its build: once is enough.
    for line in dict.fromkeys(lines):
        terminalreporter.write_line(f"inner run: {line}")
    shutil.rmtree(directory, ignore_errors=True)


def check_suite_run(
    label: str,
    stdout: str,
    connector: str,
    required: Sequence[str],
    *,
    broker_expected: bool = True,
) -> list[str]:
    """An inner pytest run's lines, checked: it names its broker and connector, the
    ``required`` tests passed, and where CI runs, nothing skipped and Kafka was Apache's.
    Its headers, key results, summary and wall times go to this run's report."""
    lines = stdout.splitlines()
    shown = [
        line
        for line in lines
        if line.startswith(("kafka backend: ", "kafka connector: ", "spark class archive: "))
        or line.startswith(tuple(f"PASSED {test}" for test in required))
        or (line.startswith("=") and " passed" in line)
        or (" call " in line and "tests/" in line and line.split()[0].endswith("s"))
    ]
    report_inner_run([f"{label} {line}" for line in dict.fromkeys(shown)])
    headers = [line for line in lines if line.startswith(("kafka backend: ", "kafka connector: "))]
    assert any(line.startswith("kafka backend: ") for line in headers), "no Kafka backend named"
    assert f"kafka connector: {connector}" in "\n".join(headers), headers
    for test in required:
        assert any(line.startswith(f"PASSED {test}") for line in lines), f"{test} did not pass"
    if os.environ.get("CI"):
        # Nothing may skip in CI: every skip would hide a test.
        assert [line for line in lines if line.startswith("SKIPPED")] == []
        # CI machines have Java and Maven: the suites must run on real Apache Kafka 4.x (a
        # run of unit tests alone starts none, and says so).
        started = [h for h in headers if h.startswith("kafka backend: ") and "not started" not in h]
        if broker_expected:
            assert "Apache Kafka 4." in "\n".join(started), headers
        else:
            assert started == [], headers
    return lines


def check_container_header(lines: Sequence[str], image: str) -> None:
    """The inner run named the container backend and its image; where CI built the image,
    the header says so (its label), so the log shows which image the suite ran on."""
    # The unit run's header says no broker started; the integration run's names it.
    [header] = [
        line
        for line in lines
        if line.startswith("kafka backend: ") and not line.startswith("kafka backend: not started")
    ]
    assert header.startswith(f"kafka backend: testcontainers ({image}"), header
    if os.environ.get(IMAGE_STATUS_ENV_VAR):
        assert f"kafka backend: testcontainers ({image}, built locally from Maven jars" in header


@functools.cache
def clean_template() -> Path:
    """A copy of the template without caches, so tests bake what a fresh clone bakes."""
    parent = Path(tempfile.mkdtemp(prefix="template-"))
    atexit.register(shutil.rmtree, parent, ignore_errors=True)
    copy = parent / TEMPLATE_DIR.name
    shutil.copytree(
        TEMPLATE_DIR, copy, ignore=shutil.ignore_patterns(".git", *WORKING_DEBRIS), symlinks=True
    )
    return copy


def combination_id(combination: Mapping[str, str]) -> str:
    return "-".join(combination[field] for field in CHOICE_FIELDS)


def bake(output_dir: Path, **answers: str) -> Path:
    """Generate a project without prompting and return its directory."""
    return Path(
        cookiecutter(
            str(clean_template()),
            no_input=True,
            extra_context=dict(answers),
            output_dir=str(output_dir),
        )
    )


def run_tool(
    args: list[str], cwd: Path, *, env: Mapping[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run a command, failing the test with its full output when it exits non-zero."""
    full_env = {**os.environ, **(env or {})}
    full_env["PATH"] = f"{BIN_DIR}{os.pathsep}{full_env.get('PATH', '')}"
    result = subprocess.run(
        args, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        failed = failed_tests(result.stdout)
        # A failing inner run's own summary lists every passed test (-rp) after the failures:
        # its names and errors go first, and to the end of this run's report too, since a
        # CI log is read by its head and its tail.
        report_inner_run(f"[{' '.join(args[:2])} in {cwd.name}] {line}" for line in failed)
        pytest.fail(
            f"{' '.join(args)} exited {result.returncode} in {cwd}\n"
            f"--- failed ---\n" + "\n".join(failed) + "\n"
            f"--- why ---\n{failure_digest(result.stdout)}\n"
            f"--- stdout, without passed tests ---\n{without_passed(result.stdout)[-4000:]}\n"
            f"--- stderr ---\n{result.stderr[-3000:]}"
        )
    return result


def failed_tests(stdout: str) -> list[str]:
    """A pytest run's short-summary lines of failed and erroring tests."""
    return [line for line in stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]


def failure_digest(stdout: str, limit: int = 6000) -> str:
    """The FAILURES and ERRORS sections of a pytest run, kept to each test's title, the
    lines where it stopped and its error lines: what says why, without the captured logs."""
    kept: list[str] = []
    inside = False
    for line in stdout.splitlines():
        if line.startswith("=") and line.rstrip("=").strip("= ") in ("FAILURES", "ERRORS"):
            inside = True
        elif line.startswith("=") and inside:
            inside = False
        elif inside and (
            line.startswith(("_", "E ", "> "))
            or (": " in line and line.split(":", 1)[0].endswith(".py"))
        ):
            kept.append(line)
    return "\n".join(kept)[:limit]


def without_passed(stdout: str) -> str:
    return "\n".join(line for line in stdout.splitlines() if not line.startswith("PASSED "))


# Where .ci/run builds the Kafka image in the background (.ci/kafka-image/build): its exit
# status lands in this file, its output in the log.
IMAGE_STATUS_ENV_VAR = "CI_KAFKA_IMAGE_STATUS"
IMAGE_LOG_ENV_VAR = "CI_KAFKA_IMAGE_LOG"
# Measured: 50 s to 3 min for the base, the JRE, the jars and the build; on a busy machine more.
IMAGE_BUILD_TIMEOUT_S = 1500.0
KAFKA_IMAGE_FIXTURE = "kafka_image"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The tests on the Kafka container run last, so that the image's build overlaps the rest.
    items.sort(key=lambda item: KAFKA_IMAGE_FIXTURE in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def kafka_image() -> str:
    """The engine and the Kafka image the container suites run on: waits for the background
    build where .ci/run started one. Without an engine: a failure in CI, else a skip."""
    status_file = os.environ.get(IMAGE_STATUS_ENV_VAR)
    if status_file:
        status = Path(status_file)
        deadline = time.monotonic() + IMAGE_BUILD_TIMEOUT_S
        while not status.exists():
            if time.monotonic() > deadline:
                pytest.fail(
                    f"the Kafka image's build did not end within {IMAGE_BUILD_TIMEOUT_S} s",
                    pytrace=False,
                )
            time.sleep(1)
        log = Path(os.environ.get(IMAGE_LOG_ENV_VAR, "/dev/null"))
        built = log.read_text(errors="replace") if log.is_file() else ""
        if status.read_text().strip() != "0":
            pytest.fail(f"the Kafka image's build failed:\n{built[-4000:]}", pytrace=False)
        report_inner_run([f"[kafka image] {line}" for line in built.splitlines()])
    from pyspark_kafka_upgrade.testing import DEFAULT_KAFKA_IMAGE, docker_is_available

    if not docker_is_available():
        reason = "no container engine answers Docker's API (DOCKER_HOST?)"
        if os.environ.get("CI"):
            pytest.fail(
                f"CI runs the Testcontainers suite, but {reason}: see .ci/podman", pytrace=False
            )
        pytest.skip(reason)
    return DEFAULT_KAFKA_IMAGE


@pytest.fixture(scope="session")
def baked_projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every combination of the choice variables, baked once per session."""
    root = tmp_path_factory.mktemp("baked")
    return {
        combination_id(combination): bake(root / combination_id(combination), **combination)
        for combination in ALL_COMBINATIONS
    }


@pytest.fixture
def default_project(baked_projects: dict[str, Path]) -> Iterator[Path]:
    yield baked_projects[combination_id(DEFAULT_COMBINATION)]
