"""Trim the options not chosen, put the library's wheel beside the project, record the
answers, and say what to do next.

Runs inside the generated project directory. Answers are decoded from JSON at run time,
never pasted into code.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Jinja's tojson escapes every ' as \u0027, so the raw string cannot be closed early.
ANSWERS: dict[str, object] = json.loads(r'''{{ cookiecutter | tojson }}''')  # fmt: skip

# Absolute, unlike ANSWERS["_repo_dir"], which is relative after `cookiecutter .`.
TEMPLATE_ROOT = Path(json.loads(r'''{{ template_root | tojson }}'''))  # fmt: skip
LIBRARY = TEMPLATE_ROOT / "library"
WHEELS = Path("wheels")
BUNDLE_FILES = [
    Path("databricks.yml"),
    Path("resources") / "pipeline_job.yml",
    Path("resources") / "upgrade_jobs.yml",
    Path("docs") / "DATABRICKS.md",
]
# Building the wheel runs pip; a bake of the same library sources reuses the last one.
WHEEL_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "cookiecutter-pyspark-kafka-upgrade"
    / "wheels"
)
BUILD_TIMEOUT_S = 600


def optional_files() -> dict[str, dict[str, list[Path]]]:
    return {"databricks_bundle": {"yes": BUNDLE_FILES}}


def library_digest() -> str:
    """The library's sources, as the wheel would be built from them."""
    digest = hashlib.sha256()
    for path in sorted([LIBRARY / "pyproject.toml", *(LIBRARY / "src").rglob("*")]):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(LIBRARY)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def put_library_wheel() -> None:
    """The pinned library as a wheel in wheels/, where `make install` finds it: no package
    index holds it until a team publishes it to its own (README, "Library versions")."""
    cached = WHEEL_CACHE / library_digest()
    if not any(cached.glob("*.whl")):
        print(f"Building the pyspark-kafka-upgrade wheel from {LIBRARY} (once per version)...")
        # A staging directory of this bake's own: two bakes at once (the template's suites
        # run in two workers) each build, and the first rename wins; the other's is dropped.
        WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{cached.name}.partial-", dir=WHEEL_CACHE))
        built = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
             str(staging), str(LIBRARY)],
            capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False,
        )  # fmt: skip
        if built.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            sys.exit(f"ERROR: could not build the library's wheel: {built.stderr.strip()[-2000:]}")
        if cached.exists() and not any(cached.glob("*.whl")):
            # Left by an older hook that died mid-way: not a build anyone can use.
            if cached.is_dir():
                shutil.rmtree(cached)
            else:
                cached.unlink()
        try:
            staging.rename(cached)
        except OSError:
            if not any(cached.glob("*.whl")):
                raise
            shutil.rmtree(staging, ignore_errors=True)
    WHEELS.mkdir(exist_ok=True)
    for wheel in cached.glob("*.whl"):
        shutil.copy2(wheel, WHEELS / wheel.name)


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
    put_library_wheel()
    write_answers()
    print_next_steps()
    return 0


if __name__ == "__main__":
    sys.exit(main())
