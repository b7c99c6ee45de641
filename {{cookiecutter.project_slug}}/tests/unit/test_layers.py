"""The package's layers, enforced: no module imports from a layer above its own.

The pure layer (rules, arithmetic, the DataFrame transformations teams edit) must stay
importable and testable without the machinery around it.
"""

import ast
from pathlib import Path

import pytest

import {{ cookiecutter.package_name }} as package

PACKAGE_DIR = Path(package.__file__).parent
PACKAGE = package.__name__

# Lower number = lower layer. Every module must be listed, so a new one needs a decision. A
# package may hold modules of several layers: the longest dotted prefix listed decides.
LAYERS: dict[str, int] = {
    "__init__": 0,  # the package root: its version and docstring
    "errors": 0,
    "validation": 1,
    "redaction": 1,
    "offsets": 1,
    "layout": 1,
    "transformations": 1,
    "json_fields": 1,
    "event_parser": 1,
    "aggregate_types": 1,
    "settings": 2,
    "ledger": 2,
    "maven": 2,
    "kafka_jars": 2,
    "spark_session": 2,
    "source": 2,
    "storage": 2,
    "progress_events": 2,
    "checkpoint": 2,
    "output_reader": 2,
    "run_lock": 2,
    "sink": 2,
    "app": 3,
    # The upgrade: its reasoning is pure; reading Kafka, the plan file, the ledger are not.
    "upgrade": 3,
    **{
        f"upgrade.{name}": 1
        for name in (
            "advisor",
            "decide",
            "errors",
            "facts",
            "history",
            "late_records",
            "plan",
            "render",
            "replay_filter",
            "restart",
            "retention",
            "signature",
            "staleness",
            "tightening",
            "windows",
            "words",
        )
    },
    "upgrade.event_scan": 2,
    "upgrade.plan_file": 2,
    "cli": 4,
    "__main__": 4,
}
LAYER_NAMES = {0: "base", 1: "pure", 2: "building blocks", 3: "application", 4: "cli"}


def _layer_key(module: str) -> str | None:
    """The longest dotted prefix of ``module`` that LAYERS lists, or None."""
    parts = module.split(".")
    for length in range(len(parts), 0, -1):
        prefix = ".".join(parts[:length])
        if prefix in LAYERS:
            return prefix
    return None


def _is_module(name: str) -> bool:
    return (PACKAGE_DIR / f"{name}.py").is_file() or (PACKAGE_DIR / name).is_dir()


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = path.relative_to(PACKAGE_DIR).with_suffix("")
        parts = [p for p in relative.parts if p != "__init__"]
        if parts:
            found.append((".".join(parts), path))
    return found


def _imported_package_modules(module: str, path: Path) -> set[str]:
    is_package = path.name == "__init__.py"
    here = module.split(".") if is_package else module.split(".")[:-1]
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                if target:
                    imported.add(target)
                else:  # "from . import x" at the package root: a module, or a name in __init__
                    imported.update(
                        alias.name if _is_module(alias.name) else "__init__" for alias in node.names
                    )
            elif node.module and node.module.startswith(PACKAGE + "."):
                imported.add(node.module.removeprefix(PACKAGE + "."))
        elif isinstance(node, ast.Import):
            imported.update(
                alias.name.removeprefix(PACKAGE + ".")
                for alias in node.names
                if alias.name.startswith(PACKAGE + ".")
            )
    return imported


@pytest.mark.parametrize(("module", "path"), _modules(), ids=lambda value: str(value))
def test_module_imports_nothing_from_a_higher_layer(module: str, path: Path) -> None:
    own = _layer_key(module)
    assert own is not None, f"{module} is in no layer; add it to LAYERS in this test"
    for target in sorted(_imported_package_modules(module, path)):
        their = _layer_key(target)
        assert their is not None, f"{module} imports {target}, which is in no layer"
        assert LAYERS[their] <= LAYERS[own], (
            f"{module} ({LAYER_NAMES[LAYERS[own]]}) imports {target} "
            f"({LAYER_NAMES[LAYERS[their]]}), a higher layer"
        )


def test_pure_layer_imports_only_the_standard_library_and_pyspark() -> None:
    import sys

    for module, path in _modules():
        key = _layer_key(module)
        if key is None or LAYERS[key] != 1:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                root = name.split(".")[0]
                allowed = root in sys.stdlib_module_names or root == "pyspark"
                assert allowed, f"pure module {module} imports {name}"
