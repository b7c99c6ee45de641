"""A team moves its project to a new library version as it takes any template update:
`cruft update`. The bump reaches the project as its new pin and the new wheel beside it,
nothing else, and the updated project is exactly a fresh bake of the new version.

The versions are commits of a copy of this template: the test bumps the library's version
there, as a release would, and leaves this working tree alone.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyspark_kafka_upgrade
from conftest import BIN_DIR, clean_template, run_tool

GIT_USER = ["-c", "user.name=template test", "-c", "user.email=test@example.com"]
VERSION_FILE = Path("library") / "src" / "pyspark_kafka_upgrade" / "__init__.py"


def git(*args: str, cwd: Path) -> str:
    return run_tool(["git", *args], cwd=cwd).stdout.strip()


def tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


def bumped(version: str) -> str:
    major, minor, patch = version.split(".")
    return f"{major}.{minor}.{int(patch) + 1}"


def test_a_library_bump_reaches_a_project_as_its_pin_and_wheel(tmp_path: Path) -> None:
    # This template as it is, in a repository of its own: cruft checks versions out.
    template = Path(shutil.copytree(clean_template(), tmp_path / "template"))
    git("init", "--quiet", cwd=template)
    git("add", "--all", cwd=template)
    git(*GIT_USER, "commit", "--quiet", "--message", "as tested", cwd=template)
    cruft = str(BIN_DIR / "cruft")
    create = [cruft, "create", str(template), "--no-input"]
    run_tool([*create, "--output-dir", str(tmp_path / "older")], cwd=tmp_path)
    project = tmp_path / "older" / "page-views-pipeline"
    git("init", "--quiet", cwd=project)
    git("add", "--all", cwd=project)
    git(*GIT_USER, "commit", "--quiet", "--message", "baked", cwd=project)
    before = tree(project)

    # The library releases a new version.
    old = pyspark_kafka_upgrade.__version__
    new = bumped(old)
    version_file = template / VERSION_FILE
    version_file.write_text(version_file.read_text().replace(f'"{old}"', f'"{new}"'))
    git(*GIT_USER, "commit", "--quiet", "--all", "--message", f"library {new}", cwd=template)

    run_tool([cruft, "update", "--skip-apply-ask"], cwd=project)
    after = tree(project)

    changed = {name for name in before.keys() & after.keys() if before[name] != after[name]}
    # The pin (in pyproject.toml and where the README names it), and the template commit
    # that cruft records (so do the answers, as _commit).
    assert changed == {"pyproject.toml", "README.md", ".cruft.json", ".cookiecutter.json"}, changed
    # Only the library's pins move: another package pinned at the same version stays.
    pin = re.compile(rf"(pyspark-kafka-upgrade(?:\[[\w,]+\])?==){re.escape(old)}\b")
    for name in ("pyproject.toml", "README.md"):
        assert pin.sub(rf"\g<1>{new}", before[name].decode()) == after[name].decode(), name
    answers = [json.loads(files[".cookiecutter.json"])["cookiecutter"] for files in (before, after)]
    assert {key for key in answers[0] if answers[0][key] != answers[1].get(key)} == {"_commit"}
    assert set(before) - set(after) == {f"wheels/pyspark_kafka_upgrade-{old}-py3-none-any.whl"}
    assert set(after) - set(before) == {f"wheels/pyspark_kafka_upgrade-{new}-py3-none-any.whl"}
    pins = re.findall(
        r"pyspark-kafka-upgrade(?:\[[\w,]+\])?==([0-9.]+)", after["pyproject.toml"].decode()
    )
    assert pins and set(pins) == {new}

    run_tool([*create, "--output-dir", str(tmp_path / "fresh")], cwd=tmp_path)
    fresh = tree(tmp_path / "fresh" / "page-views-pipeline")
    assert sorted(name for name in after if name != ".cruft.json") == sorted(
        name for name in fresh if name != ".cruft.json"
    )
    assert [name for name in fresh if name != ".cruft.json" and after[name] != fresh[name]] == []
    run_tool([cruft, "check"], cwd=project)  # exits 1 when the project is behind
