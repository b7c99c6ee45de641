"""The library installed where nothing else is: a fresh virtualenv with the wheel a bake puts
beside the project and pytest, and no pyspark. pytest must run a project's tests there: the
plugin is loaded by its entry point wherever the library is installed, and once imported
pyspark as it loaded, which failed every pytest run before collecting (issue 36).

The library's tests/unit/test_plugin_imports.py checks the same, faster, on every import
the plugin could make eagerly; this is the case as a user meets it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DEFAULT_COMBINATION, combination_id

# ensurepip copies pip into the environment: seconds, more on a busy machine.
VENV_TIMEOUT_S = 180
# The wheel's dependencies (pyarrow, confluent-kafka) come from pip's cache after the first
# run; cold, from the index.
INSTALL_TIMEOUT_S = 900
RUN_TIMEOUT_S = 180
# Settings of the environment running this suite that would reach into the clean one.
LEAKING = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")
TRIVIAL_TEST = "def test_arithmetic():\n    assert 1 + 1 == 2\n"


def run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in LEAKING}
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def output_of(result: subprocess.CompletedProcess[str]) -> str:
    return f"--- stdout ---\n{result.stdout[-6000:]}\n--- stderr ---\n{result.stderr[-6000:]}"


@pytest.fixture(scope="module")
def clean_python(baked_projects: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a virtualenv holding the library's wheel (the default bake's), its
    dependencies and pytest (this suite's version), nothing else."""
    project = baked_projects[combination_id(DEFAULT_COMBINATION)]
    [wheel] = (project / "wheels").glob("pyspark_kafka_upgrade-*.whl")
    directory = tmp_path_factory.mktemp("clean-install")
    venv = directory / "venv"
    made = run([sys.executable, "-m", "venv", str(venv)], directory, VENV_TIMEOUT_S)
    assert made.returncode == 0, output_of(made)
    python = venv / "bin" / "python"
    pip_install = [str(python), "-m", "pip", "install", "--quiet"]
    pinned_pytest = f"pytest=={pytest.__version__}"
    installed = run([*pip_install, str(wheel), pinned_pytest], directory, INSTALL_TIMEOUT_S)
    assert installed.returncode == 0, output_of(installed)
    return python


def test_the_clean_virtualenv_has_no_pyspark(clean_python: Path, tmp_path: Path) -> None:
    # Else the next test would prove nothing.
    result = run([str(clean_python), "-c", "import pyspark"], tmp_path, RUN_TIMEOUT_S)

    assert result.returncode != 0
    assert "No module named 'pyspark'" in result.stderr


def test_pytest_runs_a_projects_tests_there(clean_python: Path, tmp_path: Path) -> None:
    (tmp_path / "test_trivial.py").write_text(TRIVIAL_TEST)

    result = run(
        [str(clean_python), "-m", "pytest", "-p", "no:cacheprovider", "test_trivial.py"],
        tmp_path,
        RUN_TIMEOUT_S,
    )

    assert result.returncode == 0, output_of(result)
    lines = result.stdout.splitlines()
    assert any(line.startswith("test_trivial.py .") for line in lines), output_of(result)
    # The plugin was loaded (by its entry point: nothing here names it), and said in one line
    # what it cannot do without pyspark.
    assert "kafka backend: not started (no selected test needs Kafka)" in lines
    assert "kafka connector: none (pyspark is not installed)" in lines
