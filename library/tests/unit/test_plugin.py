"""The plugin marks every test that needs a broker ``integration``, so that a project's
`pytest -m "not integration"` never starts one, whether or not the test's author marked it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark_kafka_upgrade

SOURCE = Path(pyspark_kafka_upgrade.__file__).resolve().parents[1]
PLUGIN = "pyspark_kafka_upgrade.testing.plugin"

TESTS = """
import pytest

@pytest.fixture
def topic(kafka_backend):
    return "t"

def test_pure():
    pass

def test_uses_the_broker(kafka_backend):
    pass

def test_uses_it_through_a_fixture(topic):
    pass

def test_uses_the_secured_broker(secured_kafka):
    pass
"""


def collected(directory: Path, selection: str) -> list[str]:
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / "test_mixed.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": str(SOURCE), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    pytest = [sys.executable, "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider"]
    result = subprocess.run(
        [*pytest, "--collect-only", "-q", "-m", selection],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return [line.split("::")[1] for line in result.stdout.splitlines() if "::" in line]


def test_not_integration_leaves_out_every_test_that_needs_a_broker(tmp_path: Path) -> None:
    assert collected(tmp_path, "not integration") == ["test_pure"]


def test_integration_selects_them_all(tmp_path: Path) -> None:
    assert collected(tmp_path, "integration") == [
        "test_uses_the_broker",
        "test_uses_it_through_a_fixture",
        "test_uses_the_secured_broker",
    ]
