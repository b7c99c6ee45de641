"""The package's layers, enforced: the import-linter contracts in pyproject.toml hold.

A layer is a folder (``_application``, ``_adapters``, ``_core``, ``_domain``), so a module's
path says its layer, and the parts inside a layer folder are ordered or independent by their
own contracts. The pure core and the domain (``_core``, ``_domain``) must stay importable
without the machinery around it: they import only the standard library, and importing all of
them loads neither pyspark nor py4j.
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


def _layered_names(container: str) -> set[str]:
    """The parts of ``container`` its contracts place: by layer, or as independent modules."""
    names: set[str] = set()
    for contract in CONTRACTS:
        if contract.get("containers") == [container]:
            names |= {n.strip() for layer in contract["layers"] for n in re.split(r"[|:]", layer)}
        for module in contract.get("modules", []) if contract["type"] == "independence" else []:
            parent, _, name = module.rpartition(".")
            if parent == container:
                names.add(name)
    return names


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


LAYER_FOLDERS = ("_application", "_adapters", "_core", "_domain")


@pytest.mark.parametrize("folder", ["", *LAYER_FOLDERS, "testing._kafka", "cli"])
def test_every_package_and_module_has_a_layer(folder: str) -> None:
    container = ".".join(filter(None, (PACKAGE, folder)))
    listed = _layered_names(container)
    present = {
        path.stem if path.is_file() else path.name
        for path in (PACKAGE_DIR / folder.replace(".", "/")).iterdir()
        if (path.suffix == ".py" and path.stem != "__init__")
        or (path.is_dir() and (path / "__init__.py").is_file())
    }
    assert sorted(present - listed) == [], "add them to a layer in pyproject.toml"
    assert sorted(listed - present) == [], "pyproject.toml names layers that do not exist"


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:``: they name types for the checker and
    load nothing (the subprocess test below holds that)."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
        for statement in node.body
        for inner in ast.walk(statement)
    }


def _third_party_imports(path: Path) -> list[str]:
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    annotations_only = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in annotations_only:
            continue
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


PURE_CORE = ("_core", "_domain")


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
        (
            "_adapters/kafka/__init__.py",
            "from pyspark_kafka_upgrade._adapters.ledger import opening",
            "Adapters",
        ),
        # the domain reaching up for a use case
        (
            "_domain/values/clock.py",
            "from pyspark_kafka_upgrade._application import verify",
            "Layers",
        ),
        # two parts of the pure core, which must stay independent of each other
        (
            "_core/formats/sink_log.py",
            "from pyspark_kafka_upgrade._core.planner import decide",
            "independent",
        ),
        # a cycle inside the planner
        (
            "_core/planner/windows_probe.py",
            "from pyspark_kafka_upgrade._core.planner import decide",
            None,
        ),
        # the pure core reaching for Spark
        ("_core/query/spark_probe.py", "import pyspark.sql", "imports no Spark"),
        # one command's module loading another's
        ("cli/_run.py", "from pyspark_kafka_upgrade.cli import _upgrade", "CLI"),
    ],
    ids=[
        "sibling-adapters",
        "domain-imports-use-case",
        "core-parts",
        "planner-cycle",
        "core-imports-spark",
        "cli-command-imports-another",
    ],
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
        decide = copy / "_core" / "planner" / "decide.py"
        decide.write_text(
            decide.read_text()
            + "\nfrom pyspark_kafka_upgrade._core.planner import windows_probe  # noqa\n"
        )
    previous = target.read_text() if target.exists() else ""
    target.write_text(previous + f"\n{line}  # noqa\n")
    contract = {
        "Layers": "Layers: testing > example > cli",
        "Adapters": "Adapters: one outside system each",
        "independent": "The pure core's parts are independent",
        "imports no Spark": "The pure core imports no Spark",
        "CLI": "CLI: one command, the parser",
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
