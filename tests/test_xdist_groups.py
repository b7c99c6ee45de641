"""`make test` keeps each xdist group on one worker: the library's integration suite and a
project's suite on one, the other suites on the other, which is what keeps CI within its budget.

pytest-xdist's loadgroup marks a test by rewriting its node id, which pytest 9.2 ignores:
the groups were then spread over both workers without a word (pytest-xdist issue 1386), and
CI took five minutes more. This runs a small session the way `make test` does and fails if
the groups do not hold.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SUITE = textwrap.dedent(
    """
    import os
    import time

    import pytest

    def _ran(name):
        with open(os.environ["WORKER_LOG"], "a") as log:
            log.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")

    @pytest.mark.xdist_group("library")
    def test_long_suite():
        _ran("library")
        time.sleep(2)

    @pytest.mark.xdist_group("library")
    def test_a_project_suite():
        _ran("library")

    @pytest.mark.xdist_group("other suites")
    @pytest.mark.parametrize("n", range(4))
    def test_other_suite(n):
        _ran("other")
        time.sleep(0.2)

    @pytest.mark.parametrize("n", range(20))
    def test_small(n):
        pass
    """
)


def test_each_group_runs_on_one_worker_and_the_two_on_two(tmp_path: Path) -> None:
    (tmp_path / "test_groups.py").write_text(SUITE)
    log = tmp_path / "workers.log"
    # As the Makefile's test target runs it.
    pytest = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup"]
    result = subprocess.run(
        [*pytest, "-p", "no:cacheprovider", "-q", "test_groups.py"],
        cwd=tmp_path,
        env={**os.environ, "WORKER_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    workers: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        group, worker = line.split()
        workers.setdefault(group, set()).add(worker)
    assert len(workers["library"]) == 1, workers
    assert len(workers["other"]) == 1, workers
    assert workers["library"] != workers["other"], workers
