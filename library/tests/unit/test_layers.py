"""The package's layers, enforced: the import-linter contracts in pyproject.toml hold.

A layer is one folder or more (``run``, ``planner``, ``values``...), so a module's layer
is where it lives. The pure core (``planner``, ``reconcile``, ``query``, ``settings``,
``formats``, ``model``, ``values``) must stay importable without the machinery around it:
it imports only the standard library, and importing all of it loads neither pyspark nor
py4j.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import pyspark_kafka_upgrade as package

PACKAGE_DIR = Path(package.__file__).parent
PACKAGE = package.__name__
LIBRARY = PACKAGE_DIR.parents[1]
PYPROJECT = LIBRARY / "pyproject.toml"
CONTRACTS = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"][
    "contracts"
]


def _layered_names() -> set[str]:
    [contract] = [c for c in CONTRACTS if c.get("containers") == [PACKAGE]]
    layers: list[str] = contract["layers"]
    return {name.strip() for layer in layers for name in re.split(r"[|:]", layer)}


def test_the_import_contracts_hold() -> None:
    # A process of its own: import-linter reconfigures logging, which would silence the
    # package's loggers for the tests after this one.
    command = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(command), "--config", str(PYPROJECT), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_with_this_path(),
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _with_this_path() -> dict[str, str]:
    """This interpreter's environment, with its sys.path, for a child that imports the package."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def test_every_package_and_module_has_a_layer() -> None:
    listed = _layered_names()
    present = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE_DIR.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__")
        or (path.is_dir() and (path / "__init__.py").is_file())
    }
    assert sorted(present - listed) == [], "add them to a layer in pyproject.toml"
    assert sorted(listed - present) == [], "pyproject.toml names layers that do not exist"


def _third_party_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        found += [
            name
            for name in names
            if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != PACKAGE
        ]
    return found


PURE_CORE = (
    "planner",
    "reconcile",
    "picture",
    "query",
    "settings",
    "formats",
    "model",
    "values",
    "errors",
)


def _pure_core_paths() -> list[Path]:
    paths = []
    for name in PURE_CORE:
        folder = PACKAGE_DIR / name
        paths += sorted(folder.rglob("*.py")) if folder.is_dir() else [folder.with_suffix(".py")]
    return paths


@pytest.mark.parametrize("path", _pure_core_paths(), ids=lambda p: str(p.relative_to(PACKAGE_DIR)))
def test_the_pure_core_imports_only_the_standard_library(path: Path) -> None:
    assert _third_party_imports(path) == [], f"{path.relative_to(PACKAGE_DIR)} imports them"


def test_importing_the_whole_pure_core_loads_no_spark() -> None:
    # A fresh interpreter: this one has pyspark loaded already. TYPE_CHECKING imports are
    # the only way the core may name a Spark type, and they load nothing.
    modules = [
        ".".join((PACKAGE, *path.relative_to(PACKAGE_DIR).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for path in _pure_core_paths()
    ]
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]: importlib.import_module(name)\n"
        "heavy = {'pyspark', 'py4j', 'matplotlib'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
        "print(len(sys.argv) - 1)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *modules],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=_with_this_path(),
    )
    loaded, imported = done.stdout.split("\n")[:2]
    assert loaded == "[]", f"the pure core loads {loaded}"
    assert int(imported) == len(modules) > 30


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # two adapters, which must stay independent of each other
        ("kafka/__init__.py", "from pyspark_kafka_upgrade.ledger import opening", "Layers"),
        # a cycle inside the planner
        ("planner/windows_probe.py", "from pyspark_kafka_upgrade.planner import decide", None),
        # the pure core reaching for Spark
        ("query/spark_probe.py", "import pyspark.sql", "imports no Spark"),
    ],
    ids=["sibling-adapters", "planner-cycle", "core-imports-spark"],
)
def test_the_contracts_fail_on_a_forbidden_import(
    tmp_path: Path, module: str, line: str, broken: str | None
) -> None:
    """The contracts can fail: each forbidden import, added to a copy, breaks one."""
    copy = tmp_path / "src" / PACKAGE
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    if broken is None:
        # A cycle needs both directions: decide imports the probe, the probe imports decide.
        (copy / "planner" / "decide.py").write_text(
            (copy / "planner" / "decide.py").read_text()
            + "\nfrom pyspark_kafka_upgrade.planner import windows_probe  # noqa\n"
        )
    previous = target.read_text() if target.exists() else ""
    target.write_text(previous + f"\n{line}  # noqa\n")
    contract = {
        "Layers": "Layers: entry > use cases",
        "imports no Spark": "The pure core imports no Spark",
        None: "No import cycles between siblings",
    }[broken]
    # The copy first; bench/, the other root package, from the library.
    check_broken(contract, tmp_path, [tmp_path / "src", LIBRARY])


def test_the_benchmarks_contract_fails_when_the_record_imports_the_kit(tmp_path: Path) -> None:
    copy = tmp_path / "bench"
    shutil.copytree(LIBRARY / "bench", copy, ignore=shutil.ignore_patterns("__pycache__"))
    record = copy / "record.py"
    record.write_text(record.read_text() + "\nfrom bench.kit import timing  # noqa\n")
    check_broken("Benchmarks: cli > benchmarks", tmp_path, [tmp_path, LIBRARY / "src"])


def check_broken(contract: str, cwd: Path, path: list[Path]) -> None:
    """lint-imports on the code found on ``path`` fails, and names ``contract`` BROKEN."""
    command = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(command), "--config", str(PYPROJECT), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))},
    )
    assert done.returncode == 1, done.stdout
    # The contract's name and its verdict share a line (the name may wrap before "BROKEN").
    text = " ".join(done.stdout.split())
    verdict = text[text.index(contract) :].split("KEPT")[0]
    assert "BROKEN" in verdict and verdict.index("BROKEN") < 200, done.stdout
