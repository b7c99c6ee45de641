"""Trim the options not chosen, record the answers, and say what to do next.

Runs inside the generated project directory. Answers are decoded from JSON at run time,
never pasted into code.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

# Jinja's tojson escapes every ' as \u0027, so the raw string cannot be closed early.
ANSWERS: dict[str, object] = json.loads(r'''{{ cookiecutter | tojson }}''')  # fmt: skip

PACKAGE_DIR = Path("src") / str(ANSWERS["package_name"])
CONTRACT_TESTS = Path("tests") / "contract"
BUNDLE_FILES = [
    Path("databricks.yml"),
    Path("resources") / "pipeline_job.yml",
    Path("resources") / "upgrade_jobs.yml",
    Path("docs") / "DATABRICKS.md",
]


def load_store_registry() -> ModuleType:
    """The package's list of ledger stores (standard library only), loaded from its file."""
    path = PACKAGE_DIR / "ledger" / "registry.py"
    spec = importlib.util.spec_from_file_location("generated_store_registry", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve the module through sys.modules while the class is created.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def optional_files() -> dict[str, dict[str, list[Path]]]:
    """Each offset store lives in its own module, with its own dependencies and contract
    test. SQLite is kept in every project: it is the zero-setup store for local runs and the
    demo. The Databricks bundle's jobs run on a cluster, whose machines cannot share a SQLite
    file: a project that chose SQLite keeps the filesystem store for them too."""
    stores = load_store_registry().STORES
    kept = {"sqlite"}
    if ANSWERS["databricks_bundle"] == "yes" and ANSWERS["offset_store"] == "sqlite":
        kept.add("filesystem")
    return {
        "offset_store": {
            name: [
                PACKAGE_DIR / "ledger" / f"{kind.module}.py",
                CONTRACT_TESTS / f"test_{kind.module}.py",
            ]
            for name, kind in stores.items()
            if name not in kept
        },
        "databricks_bundle": {"yes": BUNDLE_FILES},
    }


# Keys cookiecutter adds for its own bookkeeping; they describe this machine, not the project.
# _extensions stays: the hooks need it to render when the answers are replayed.
LOCAL_KEYS = {"_output_dir", "_repo_dir", "_checkout", "__prompts__"}


def remove_unchosen_files() -> None:
    for field, files_by_choice in optional_files().items():
        chosen = ANSWERS[field]
        for choice, paths in files_by_choice.items():
            if choice == chosen:
                continue
            for path in paths:
                if not path.exists():
                    sys.exit(f"ERROR: template is broken: {path} (for {field}={choice}) is missing")
                path.unlink()
                # A folder only an unchosen option used (resources/) would be left empty.
                for parent in path.parents[:-1]:
                    if any(parent.iterdir()):
                        break
                    parent.rmdir()


def write_answers() -> None:
    """Write the answers in cookiecutter's replay format.

    `cookiecutter --replay-file .cookiecutter.json <template>` regenerates the project, and
    cruft reads the same {"cookiecutter": {...}} shape as its context.
    """
    answers = {key: value for key, value in ANSWERS.items() if key not in LOCAL_KEYS}
    Path(".cookiecutter.json").write_text(
        json.dumps({"cookiecutter": answers}, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def print_next_steps() -> None:
    slug = ANSWERS["project_slug"]
    package = ANSWERS["package_name"]
    print(
        f"""
Generated {slug}.

Next steps:
  cd {slug}
  make install        # virtualenv in .venv with the pinned, tested versions
  make test           # lint, type checks, unit and Kafka integration tests
  .venv/bin/{package} --help

Kafka for the integration tests: Testcontainers when Docker runs, else Apache Kafka as a
local process (Java, jars from Maven), else a broker from PyPI; KAFKA_BOOTSTRAP_SERVERS
points them at your own.
"""
    )
    if ANSWERS["databricks_bundle"] == "yes":
        print("Databricks (classic compute only): docs/DATABRICKS.md\n")


def main() -> int:
    remove_unchosen_files()
    write_answers()
    print_next_steps()
    return 0


if __name__ == "__main__":
    sys.exit(main())
