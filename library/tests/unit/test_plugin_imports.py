"""Loading the pytest plugin imports none of the heavy packages, and a session whose tests use
none of its fixtures never does: installing the library must not break pytest where pyspark,
a Kafka client or a container library is absent. Each check runs in a fresh interpreter,
whose ``sys.modules`` says what was loaded; the negative controls put an eager import into a
copy of the plugin and see the same checks fail.

The template's tests/test_clean_install.py does the real thing: a fresh virtualenv with the
wheel and pytest alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark_kafka_upgrade

# What the plugin may import only once a fixture or hook needs it.
HEAVY = (
    "confluent_kafka",
    "cryptography",
    "docker",
    "noida_db",
    "py4j",
    "pyspark",
    "testcontainers",
)
PLUGIN = "pyspark_kafka_upgrade.testing.plugin"
# The import path of the package under test (src/), for the child interpreters.
SOURCE = Path(pyspark_kafka_upgrade.__file__).resolve().parents[1]
# A cold interpreter importing pytest and the library, on a busy machine.
TIMEOUT_S = 120

# The child's last line: the heavy packages it loaded (a blocked one is None, not loaded).
REPORT_LOADED = f"""
import json, sys
loaded = {{name.partition(".")[0] for name, module in sys.modules.items() if module is not None}}
print(json.dumps(sorted(loaded & set({HEAVY!r}))))
"""
# As if they were not installed: an import fails, importlib.util.find_spec says None.
BLOCK_HEAVY = f"import sys\nsys.modules.update(dict.fromkeys({HEAVY!r}))\n"
TRIVIAL_TEST = "def test_arithmetic():\n    assert 1 + 1 == 2\n"


def run_python(code: str, source: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Only the package under test on the path: its plugin, not an installed copy's. No
    # plugin autoloading: another installed plugin's imports are not this one's.
    env = {**os.environ, "PYTHONPATH": str(source), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def loaded_by_import(source: Path, cwd: Path) -> list[str]:
    """The heavy packages a fresh interpreter holds after importing the plugin."""
    result = run_python(f"import {PLUGIN}\n{REPORT_LOADED}", source, cwd)
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.splitlines()[-1])
    return loaded


def session(source: Path, directory: Path, *, block: bool) -> subprocess.CompletedProcess[str]:
    """A pytest session with the plugin over one trivial test, in ``directory``."""
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / "test_trivial.py").write_text(TRIVIAL_TEST)
    run = (
        "import pytest\n"
        f'code = pytest.main(["-p", "{PLUGIN}", "-p", "no:cacheprovider", "test_trivial.py"])\n'
        "sys.stdout.flush()\n"
    )
    report = f"{REPORT_LOADED}\nsys.exit(int(code))\n"
    return run_python(f"import sys\n{BLOCK_HEAVY if block else ''}{run}{report}", source, directory)


def with_eager_import(tmp_path: Path, packages: str) -> Path:
    """A copy of the package whose plugin imports ``packages`` when it loads."""
    copy = tmp_path / "src"
    shutil.copytree(
        SOURCE / "pyspark_kafka_upgrade",
        copy / "pyspark_kafka_upgrade",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    plugin = copy / "pyspark_kafka_upgrade" / "testing" / "plugin.py"
    text = plugin.read_text()
    assert "\nimport pytest\n" in text
    plugin.write_text(text.replace("\nimport pytest\n", f"\nimport pytest\nimport {packages}\n", 1))
    return copy


def test_loading_the_plugin_imports_none_of_the_heavy_packages(tmp_path: Path) -> None:
    assert loaded_by_import(SOURCE, tmp_path) == []


def test_a_session_whose_tests_use_no_fixture_imports_none_of_them(tmp_path: Path) -> None:
    # The hooks of every session run: the header, the markers, the exit report's checks.
    result = session(SOURCE, tmp_path, block=False)

    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "kafka backend: not started (no selected test needs Kafka)" in lines
    assert json.loads(lines[-1]) == []


def test_without_them_pytest_runs_and_the_header_says_what_is_missing(tmp_path: Path) -> None:
    result = session(SOURCE, tmp_path, block=True)

    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "kafka connector: none (pyspark is not installed)" in lines
    assert any(line.startswith("test_trivial.py .") for line in lines), result.stdout


def test_an_eager_import_in_the_plugin_is_caught(tmp_path: Path) -> None:
    # The negative control: the same check, on a plugin that imports each of them at the top.
    source = with_eager_import(tmp_path, ", ".join(HEAVY))

    assert loaded_by_import(source, tmp_path) == sorted(HEAVY)


def test_an_eager_import_breaks_pytest_where_the_package_is_absent(tmp_path: Path) -> None:
    # The negative control of the session without them: issue 36's failure, before collecting.
    source = with_eager_import(tmp_path, "pyspark")
    directory = tmp_path / "project"
    directory.mkdir()

    result = session(source, directory, block=True)

    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "import of pyspark halted" in output
    assert "test_trivial.py ." not in output
