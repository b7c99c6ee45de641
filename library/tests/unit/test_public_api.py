"""The public API: what pyspark_kafka_upgrade and its public modules export, all of it
documented in docs/API.md, and importable without Spark where it promises so."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pyspark_kafka_upgrade as package
from pyspark_kafka_upgrade import testing

LIBRARY = Path(package.__file__).parents[2]
API_DOC = LIBRARY / "docs" / "API.md"
PUBLIC = [
    "pyspark_kafka_upgrade",
    *(f"pyspark_kafka_upgrade.{m}" for m in ("steps", "cli", "output", "testing")),
]


@pytest.mark.parametrize("module", PUBLIC)
def test_every_exported_name_resolves_and_is_documented(module: str) -> None:
    imported = importlib.import_module(module)
    names = list(imported.__all__)
    assert names, f"{module} exports nothing"
    documented = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)", API_DOC.read_text(encoding="utf-8")))
    for name in names:
        assert getattr(imported, name) is not None
    assert sorted(set(names) - documented) == [], f"docs/API.md does not show them ({module})"


def test_the_testing_exports_agree_with_what_they_import() -> None:
    # __all__, the lazy map and the TYPE_CHECKING imports (what type checkers and the API
    # check see) must name the same things, or a name exists for one reader only.
    tree = ast.parse(Path(testing.__file__).read_text(encoding="utf-8"))
    checked: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                checked |= {alias.name: statement.module for alias in statement.names}
    assert checked == testing._WHERE
    assert sorted(testing.__all__) == sorted(testing._WHERE)


def test_importing_the_package_and_its_testing_api_loads_no_spark() -> None:
    # A fresh interpreter: this one has pyspark loaded already.
    script = (
        "import sys, pyspark_kafka_upgrade, pyspark_kafka_upgrade.testing\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'py4j', 'matplotlib'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={"PYTHONPATH": str(Path(package.__file__).parents[1]), "PATH": ""},
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
