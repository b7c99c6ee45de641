"""GitHub Actions workflows, the template's own and every generated one, pass actionlint."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ALL_COMBINATIONS, BIN_DIR, TEMPLATE_DIR, combination_id, run_tool
from pyspark_kafka_upgrade.testing import POSTGRES_DSN_ENV

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


# The make targets that run a generated project's tests.
TEST_TARGETS = ("make unit", "make integration", "make test")
DSN_VARIABLE = "LEDGER_TEST_POSTGRES_DSN"


def _runs(job: dict[str, Any]) -> list[str]:
    return [str(step.get("run", "")).strip() for step in job.get("steps", [])]


def _step_env(job: dict[str, Any], target: str) -> dict[str, str]:
    env = dict(job.get("env") or {})
    for step in job.get("steps", []):
        if str(step.get("run", "")).strip() == target:
            env.update(step.get("env") or {})
    return {str(k): str(v) for k, v in env.items()}


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_every_job_that_runs_tests_has_the_services_they_need(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    jobs: dict[str, dict[str, Any]] = yaml.safe_load(
        (project / ".github" / "workflows" / "ci.yml").read_text()
    )["jobs"]
    testing = {
        (name, target): job
        for name, job in jobs.items()
        for target in _runs(job)
        if target in TEST_TARGETS
    }
    targets = {target for _, target in testing}
    assert "make test" in targets or {"make unit", "make integration"} <= targets, targets

    # The upgrade's proof keeps its ledger in the project's store, through the plugin,
    # which reads the server's address from this variable.
    assert POSTGRES_DSN_ENV == DSN_VARIABLE
    for (name, target), job in testing.items():
        uses = [str(step.get("uses", "")) for step in job.get("steps", [])]
        # Spark runs in a JVM; the built-in connector's jars come from mvn (on the runner).
        assert any(u.startswith("actions/setup-java@") for u in uses), f"{name}: no Java"
        services = job.get("services") or {}
        if combination["offset_store"] != "postgres" or target == "make unit":
            assert "postgres" not in services, f"{name}: a PostgreSQL service nothing uses"
            continue
        # The integration tests of this project keep their ledger there.
        service = services.get("postgres")
        assert service is not None, f"{name} runs `{target}` without a PostgreSQL service"
        assert "5432:5432" in [str(p) for p in service.get("ports", [])], name
        dsn = _step_env(job, target).get(DSN_VARIABLE, "")
        assert dsn.startswith("postgresql://"), f"{name}: `{target}` has no {DSN_VARIABLE}"
        password = service.get("env", {}).get("POSTGRES_PASSWORD", "")
        assert f":{password}@127.0.0.1:5432/" in dsn, (name, dsn)


def test_the_integration_job_runs_on_a_kafka_container_and_on_a_local_kafka(
    default_project: Path,
) -> None:
    job = yaml.safe_load((default_project / ".github" / "workflows" / "ci.yml").read_text())[
        "jobs"
    ]["integration"]
    backends = [entry["backend"] for entry in job["strategy"]["matrix"]["include"]]

    assert sorted(backends) == ["apache", "testcontainers"]
    assert job["env"]["KAFKA_BACKEND"] == "${{ matrix.backend }}"
    assert "${{ matrix.backend }}" in job["name"]


DEPENDABOT_INTERVALS = {"daily", "weekly", "monthly", "quarterly", "semiannually", "yearly"}


def test_the_generated_dependabot_config_watches_pip_and_actions(default_project: Path) -> None:
    # The parts of Dependabot's configuration schema (version 2) a mistake would break.
    config: dict[str, Any] = yaml.safe_load(
        (default_project / ".github" / "dependabot.yml").read_text(encoding="utf-8")
    )
    assert config["version"] == 2
    updates = config["updates"]
    assert sorted(u["package-ecosystem"] for u in updates) == ["github-actions", "pip"]
    for update in updates:
        assert set(update) <= {
            "package-ecosystem",
            "directory",
            "schedule",
            "groups",
            "open-pull-requests-limit",
        }, update
        assert update["directory"] == "/"
        assert update["schedule"]["interval"] in DEPENDABOT_INTERVALS
        for name, group in update.get("groups", {}).items():
            assert group["patterns"], f"group {name} matches nothing"
