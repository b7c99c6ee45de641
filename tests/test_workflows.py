"""GitHub Actions workflows, the template's own and every generated one, pass actionlint."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ALL_COMBINATIONS, BIN_DIR, TEMPLATE_DIR, combination_id, run_tool

PINNED_ACTION = re.compile(r"uses:\s*[\w.-]+/[\w.-]+@[0-9a-f]{40}\s+#\s*v\d")


def workflow_files(root: Path) -> list[Path]:
    return sorted((root / ".github" / "workflows").glob("*.y*ml"))


def test_template_repository_workflows_pass_actionlint() -> None:
    files = workflow_files(TEMPLATE_DIR)
    assert files, "the template repository has no workflow"
    run_tool([str(BIN_DIR / "actionlint"), *map(str, files)], cwd=TEMPLATE_DIR)


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_generated_workflows_pass_actionlint(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    files = workflow_files(project)
    assert files, "the generated project has no workflow"
    run_tool([str(BIN_DIR / "actionlint"), *map(str, files)], cwd=project)


@pytest.mark.parametrize("root", ["template", "generated"])
def test_every_action_is_pinned_to_a_commit(root: str, default_project: Path) -> None:
    for path in workflow_files(TEMPLATE_DIR if root == "template" else default_project):
        for line in path.read_text().splitlines():
            if "uses:" in line:
                assert PINNED_ACTION.search(line), f"{path.name}: not pinned to a SHA: {line}"
