"""A project baked from an older version of the template updates to this one with cruft,
and comes out exactly as a fresh bake of this one.

The versions are commits of this repository, so the test checks the committed template
(HEAD), not uncommitted edits. It needs the history: a shallow clone is refused with a line
that says how to fetch it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import BIN_DIR, TEMPLATE_DIR, run_tool

# The version before the package was regrouped into folders (values/, planner/, sink/...):
# the largest update a project baked so far has to take, with dozens of renames.
OLDER = "05cc1e1823bd1b1d17b909ea41a5f49a3ebcc677"
GIT_USER = ["-c", "user.name=template test", "-c", "user.email=test@example.com"]


def git(*args: str, cwd: Path) -> str:
    return run_tool(["git", *args], cwd=cwd).stdout.strip()


def tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


def test_a_project_baked_from_an_older_template_updates_to_a_fresh_bake(tmp_path: Path) -> None:
    has_older = subprocess.run(
        ["git", "cat-file", "-e", f"{OLDER}^{{commit}}"], cwd=TEMPLATE_DIR, check=False
    )
    if has_older.returncode != 0:
        pytest.fail(f"commit {OLDER} is not here: fetch the whole history (git fetch --unshallow)")
    head = git("rev-parse", "HEAD", cwd=TEMPLATE_DIR)
    # A clone: cruft checks versions out, which must not touch this working tree.
    template = tmp_path / "template"
    run_tool(["git", "clone", "--quiet", str(TEMPLATE_DIR), str(template)], cwd=tmp_path)
    cruft = str(BIN_DIR / "cruft")
    create = [cruft, "create", str(template), "--no-input", "--checkout"]
    run_tool([*create, OLDER, "--output-dir", str(tmp_path / "older")], cwd=tmp_path)
    project = tmp_path / "older" / "page-views-pipeline"
    git("init", "--quiet", cwd=project)
    git("add", "--all", cwd=project)
    git(*GIT_USER, "commit", "--quiet", "--message", "baked", cwd=project)

    run_tool([cruft, "update", "--checkout", head, "--skip-apply-ask"], cwd=project)

    run_tool([*create, head, "--output-dir", str(tmp_path / "fresh")], cwd=tmp_path)
    fresh = tree(tmp_path / "fresh" / "page-views-pipeline")
    updated = tree(project)
    assert sorted(updated) == sorted(fresh)
    assert [name for name in fresh if updated[name] != fresh[name]] == []
    run_tool([cruft, "check"], cwd=project)  # exits 1 when the project is behind
