"""The self-tests' own helpers, on the output of a real inner pytest run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import INNER_RUNS_ENV_VAR, failed_tests, failure_digest, run_tool, without_passed


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A run of 40 passing tests and one failing, reported as the inner suites report."""
    directory = tmp_path_factory.mktemp("inner")
    (directory / "test_inner.py").write_text(
        textwrap.dedent(
            """
            import logging
            import pytest

            @pytest.mark.parametrize("n", range(40))
            def test_passes(n):
                assert n >= 0

            def test_the_broker_answers_in_time():
                logging.getLogger("noise").warning("captured log line " * 50)
                lag = 7
                assert lag < 5, "the consumer lags 7 batches"
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfEsxXp", str(directory)],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stdout
    return result.stdout


def test_the_failed_test_is_named(failing_run: str) -> None:
    [line] = failed_tests(failing_run)
    assert line.startswith("FAILED test_inner.py::test_the_broker_answers_in_time")


def test_the_digest_says_why_without_the_captured_log(failing_run: str) -> None:
    digest = failure_digest(failing_run)
    assert "test_the_broker_answers_in_time" in digest
    assert "the consumer lags 7 batches" in digest
    assert "captured log line" not in digest
    assert "PASSED" not in digest


def test_passed_lines_are_left_out_of_the_tail(failing_run: str) -> None:
    assert failing_run.count("PASSED ") == 40
    assert "PASSED " not in without_passed(failing_run)
    assert "1 failed, 40 passed" in without_passed(failing_run)


def test_a_failing_tool_fails_the_test_with_the_failed_test_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its failed test goes to the end of the report, which is this run's: not here.
    monkeypatch.setenv(INNER_RUNS_ENV_VAR, str(tmp_path))
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "test_x.py").write_text(
        "".join(f"def test_ok_{n}(): pass\n" for n in range(300))
        + "def test_bad(): assert 1 == 2, 'one is not two'\n"
    )
    with pytest.raises(pytest.fail.Exception) as failure:
        run_tool(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfEp"], tmp_path / "inner"
        )
    head = str(failure.value)[:600]
    assert "FAILED test_x.py::test_bad" in head
    assert "one is not two" in str(failure.value)
    [report] = tmp_path.glob("*.txt")
    assert "FAILED test_x.py::test_bad" in report.read_text()
