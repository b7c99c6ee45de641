"""The package's layers, enforced: the import-linter contracts in pyproject.toml hold.

A layer is one folder or more (``app``, ``planner``, ``values``...), so a module's layer
is where it lives. The pure parts (``values``) and what must stay free of I/O
(``planner``, ``transformations``) must also stay importable without the machinery around
them, which the last test checks for third-party packages.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import {{ cookiecutter.package_name }} as package

PACKAGE_DIR = Path(package.__file__).parent
PACKAGE = package.__name__
PYPROJECT = PACKAGE_DIR.parents[1] / "pyproject.toml"
CONTRACTS = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"][
    "contracts"
]


def _layered_names() -> set[str]:
    [contract] = [c for c in CONTRACTS if c["type"] == "layers"]
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
    )
    assert done.returncode == 0, done.stdout + done.stderr


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


@pytest.mark.parametrize(
    ("folder", "allowed"),
    [("values", set()), ("planner", set()), ("transformations", {"pyspark"})],
)
def test_pure_folders_import_only_the_standard_library(folder: str, allowed: set[str]) -> None:
    for path in sorted((PACKAGE_DIR / folder).rglob("*.py")):
        outside = [name for name in _third_party_imports(path) if name.split(".")[0] not in allowed]
        assert outside == [], f"{path.relative_to(PACKAGE_DIR)} imports {outside}"
