"""Every combination of choices bakes exactly the expected files, with no template left over."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import ALL_COMBINATIONS, CHOICE_FIELDS, CHOICES, DEFAULT_COMBINATION, combination_id

PACKAGE = "src/page_views_pipeline"

COMMON_FILES = {
    ".cookiecutter.json",
    ".github/dependabot.yml",
    ".github/workflows/ci.yml",
    ".gitignore",
    "Makefile",
    "README.md",
    "bench/connector_comparison.py",
    "bench/harness.py",
    "bench/listener_overhead.py",
    "bench/planner_speed.py",
    "bench/source_throughput.py",
    "bench/upgrade_downtime.py",
    "constraints-oldest.txt",
    "constraints.txt",
    "demo/upgrade_demo.py",
    "deploy/kubernetes/sparkapplication.yaml",
    "deploy/main.py",
    "deploy/submit.sh",
    "docs/ARCHITECTURE.md",
    "docs/DEPLOY.md",
    "pipeline.toml",
    "pyproject.toml",
    f"{PACKAGE}/__init__.py",
    f"{PACKAGE}/__main__.py",
    f"{PACKAGE}/app/__init__.py",
    f"{PACKAGE}/app/checkpoint_command.py",
    f"{PACKAGE}/app/configuration.py",
    f"{PACKAGE}/app/connector_command.py",
    f"{PACKAGE}/app/inspect.py",
    f"{PACKAGE}/app/output_command.py",
    f"{PACKAGE}/app/progress.py",
    f"{PACKAGE}/app/queries.py",
    f"{PACKAGE}/app/run.py",
    f"{PACKAGE}/app/run_bookkeeping.py",
    f"{PACKAGE}/app/supervisor.py",
    f"{PACKAGE}/checkpoint/__init__.py",
    f"{PACKAGE}/checkpoint/commit_log.py",
    f"{PACKAGE}/checkpoint/errors.py",
    f"{PACKAGE}/checkpoint/log_files.py",
    f"{PACKAGE}/checkpoint/offset_log.py",
    f"{PACKAGE}/checkpoint/query_metadata.py",
    f"{PACKAGE}/checkpoint/reader.py",
    f"{PACKAGE}/checkpoint/sink_log.py",
    f"{PACKAGE}/cli.py",
    f"{PACKAGE}/defaults.toml",
    f"{PACKAGE}/errors.py",
    f"{PACKAGE}/generation/__init__.py",
    f"{PACKAGE}/generation/generations.py",
    f"{PACKAGE}/generation/layout.py",
    f"{PACKAGE}/generation/run_lock.py",
    f"{PACKAGE}/generation/signature.py",
    f"{PACKAGE}/ledger/__init__.py",
    f"{PACKAGE}/ledger/errors.py",
    f"{PACKAGE}/ledger/listener.py",
    f"{PACKAGE}/ledger/opening.py",
    f"{PACKAGE}/ledger/records.py",
    f"{PACKAGE}/ledger/registry.py",
    f"{PACKAGE}/ledger/sqlite_store.py",
    f"{PACKAGE}/ledger/store.py",
    f"{PACKAGE}/planner/__init__.py",
    f"{PACKAGE}/planner/advisor.py",
    f"{PACKAGE}/planner/decide.py",
    f"{PACKAGE}/planner/errors.py",
    f"{PACKAGE}/planner/facts.py",
    f"{PACKAGE}/planner/history.py",
    f"{PACKAGE}/planner/late_records.py",
    f"{PACKAGE}/planner/plan.py",
    f"{PACKAGE}/planner/render.py",
    f"{PACKAGE}/planner/replay_filter.py",
    f"{PACKAGE}/planner/restart.py",
    f"{PACKAGE}/planner/retention.py",
    f"{PACKAGE}/planner/signature.py",
    f"{PACKAGE}/planner/staleness.py",
    f"{PACKAGE}/planner/tightening.py",
    f"{PACKAGE}/planner/windows.py",
    f"{PACKAGE}/planner/words.py",
    f"{PACKAGE}/py.typed",
    f"{PACKAGE}/settings.py",
    f"{PACKAGE}/sink/__init__.py",
    f"{PACKAGE}/sink/formats.py",
    f"{PACKAGE}/sink/reader.py",
    f"{PACKAGE}/sink/writer.py",
    f"{PACKAGE}/source/__init__.py",
    f"{PACKAGE}/source/connector.py",
    f"{PACKAGE}/source/connectors.py",
    f"{PACKAGE}/source/data_loss.py",
    f"{PACKAGE}/source/errors.py",
    f"{PACKAGE}/source/initial_offsets.py",
    f"{PACKAGE}/source/kafka_metadata.py",
    f"{PACKAGE}/source/options.py",
    f"{PACKAGE}/source/partition_reader.py",
    f"{PACKAGE}/source/pykafka.py",
    f"{PACKAGE}/source/ranges.py",
    f"{PACKAGE}/source/rate_limit.py",
    f"{PACKAGE}/source/schema.py",
    f"{PACKAGE}/source/starting_offsets.py",
    f"{PACKAGE}/spark/__init__.py",
    f"{PACKAGE}/spark/cluster_storage.py",
    f"{PACKAGE}/spark/errors.py",
    f"{PACKAGE}/spark/kafka_jars.py",
    f"{PACKAGE}/spark/maven.py",
    f"{PACKAGE}/spark/progress_events.py",
    f"{PACKAGE}/spark/session.py",
    f"{PACKAGE}/storage.py",
    f"{PACKAGE}/transformations/__init__.py",
    f"{PACKAGE}/transformations/aggregate_types.py",
    f"{PACKAGE}/transformations/aggregation.py",
    f"{PACKAGE}/transformations/columns.py",
    f"{PACKAGE}/transformations/event_parser.py",
    f"{PACKAGE}/transformations/events.py",
    f"{PACKAGE}/transformations/parsing.py",
    f"{PACKAGE}/upgrade/__init__.py",
    f"{PACKAGE}/upgrade/apply.py",
    f"{PACKAGE}/upgrade/commands.py",
    f"{PACKAGE}/upgrade/event_scan.py",
    f"{PACKAGE}/upgrade/gather.py",
    f"{PACKAGE}/upgrade/lookup.py",
    f"{PACKAGE}/upgrade/plan_file.py",
    f"{PACKAGE}/values/__init__.py",
    f"{PACKAGE}/values/clock.py",
    f"{PACKAGE}/values/json_fields.py",
    f"{PACKAGE}/values/offsets.py",
    f"{PACKAGE}/values/redaction.py",
    f"{PACKAGE}/values/validation.py",
    "tests/conftest.py",
    "tests/contract/conftest.py",
    "tests/contract/test_offset_store_contract.py",
    "tests/contract/test_sqlite_store.py",
    "tests/integration/test_builtin_connector.py",
    "tests/integration/test_cluster_submit.py",
    "tests/integration/test_demo.py",
    "tests/integration/test_kafka_backend_smoke.py",
    "tests/integration/test_pipeline_run.py",
    "tests/integration/test_proof_damaged_ledger.py",
    "tests/integration/test_proof_kill_trials.py",
    "tests/integration/test_proof_late_events.py",
    "tests/integration/test_proof_negative_controls.py",
    "tests/integration/test_proof_topology.py",
    "tests/integration/test_proof_upgrade_kills.py",
    "tests/integration/test_pykafka_crash.py",
    "tests/integration/test_pykafka_data_loss.py",
    "tests/integration/test_pykafka_source.py",
    "tests/integration/test_pykafka_triggers.py",
    "tests/integration/test_run_command.py",
    "tests/integration/test_settings_walk.py",
    "tests/integration/test_upgrade.py",
    "tests/integration/test_upgrade_refusals.py",
    "tests/support/__init__.py",
    "tests/support/append_simulator.py",
    "tests/support/background_run.py",
    "tests/support/driver_process.py",
    "tests/support/fake_repository.py",
    "tests/support/fake_world.py",
    "tests/support/kafka_backends.py",
    "tests/support/kill_after_step.py",
    "tests/support/ledger_damage.py",
    "tests/support/offset_stores.py",
    "tests/support/oracle.py",
    "tests/support/pipelines.py",
    "tests/support/plans.py",
    "tests/support/pykafka_streams.py",
    "tests/support/settings_walk.py",
    "tests/support/soak_table.py",
    "tests/support/spark.py",
    "tests/support/spark_cluster.py",
    "tests/support/stalled_driver.py",
    "tests/support/waiting.py",
    "tests/unit/test_advisor.py",
    "tests/unit/test_aggregate_types.py",
    "tests/unit/test_checkpoint_inspector.py",
    "tests/unit/test_checkpoint_reader.py",
    "tests/unit/test_cli.py",
    "tests/unit/test_cluster_storage.py",
    "tests/unit/test_connector_options.py",
    "tests/unit/test_decide.py",
    "tests/unit/test_deploy_files.py",
    "tests/unit/test_event_parser.py",
    "tests/unit/test_kafka_backend_choice.py",
    "tests/unit/test_layers.py",
    "tests/unit/test_ledger_listener.py",
    "tests/unit/test_maven.py",
    "tests/unit/test_offsets.py",
    "tests/unit/test_output_reader.py",
    "tests/unit/test_plan.py",
    "tests/unit/test_planner.py",
    "tests/unit/test_planner_properties.py",
    "tests/unit/test_progress_events.py",
    "tests/unit/test_progress_line.py",
    "tests/unit/test_redaction.py",
    "tests/unit/test_render.py",
    "tests/unit/test_run_bookkeeping.py",
    "tests/unit/test_run_lock.py",
    "tests/unit/test_settings.py",
    "tests/unit/test_source_initial_offsets.py",
    "tests/unit/test_source_options.py",
    "tests/unit/test_source_ranges.py",
    "tests/unit/test_source_rate_limit.py",
    "tests/unit/test_source_schema.py",
    "tests/unit/test_spark_session_checks.py",
    "tests/unit/test_staleness.py",
    "tests/unit/test_supervisor.py",
    "tests/unit/test_transformations.py",
    "tests/unit/test_upgrade_commands.py",
    "tests/unit/test_validation.py",
}
FILES_PER_CHOICE = {
    ("offset_store", "postgres"): {
        f"{PACKAGE}/ledger/postgres_store.py",
        "tests/contract/test_postgres_store.py",
    },
    ("offset_store", "filesystem"): {
        f"{PACKAGE}/ledger/filesystem_store.py",
        "tests/contract/test_filesystem_store.py",
    },
}
# "${{ ... }}" is a GitHub Actions expression, meant to survive baking.
TEMPLATE_LEFTOVER = re.compile(r"(?<!\$)\{\{|\{%|cookiecutter\.")


def expected_files(combination: dict[str, str]) -> set[str]:
    files = set(COMMON_FILES)
    for choice in combination.items():
        files |= FILES_PER_CHOICE.get(choice, set())
    return files


def generated_files(project: Path) -> set[str]:
    return {
        path.relative_to(project).as_posix()
        for path in project.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_bakes_exactly_the_expected_files(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    assert project.name == "page-views-pipeline"
    assert generated_files(project) == expected_files(combination)


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_no_template_syntax_is_left(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    leftovers = [
        f"{name}: {match.group()!r}"
        for name in sorted(generated_files(project))
        if name != ".cookiecutter.json"  # the answers file names its keys on purpose
        for match in TEMPLATE_LEFTOVER.finditer((project / name).read_text(encoding="utf-8"))
    ]
    assert leftovers == []


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_answers_are_recorded_in_replay_format(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    answers = json.loads((project / ".cookiecutter.json").read_text())["cookiecutter"]
    assert {field: answers[field] for field in CHOICE_FIELDS} == combination
    assert answers["package_name"] == "page_views_pipeline"
    assert not {"_output_dir", "_repo_dir", "_checkout"} & answers.keys()


@pytest.mark.parametrize("combination", ALL_COMBINATIONS, ids=combination_id)
def test_choices_reach_the_generated_settings_and_dependencies(
    baked_projects: dict[str, Path], combination: dict[str, str]
) -> None:
    project = baked_projects[combination_id(combination)]
    defaults = (project / PACKAGE / "defaults.toml").read_text()
    assert f'format = "{combination["sink_format"]}"' in defaults
    assert f'connector = "{combination["kafka_connector"]}"' in defaults
    assert f'store = "{combination["offset_store"]}"' in defaults
    wants_psycopg = combination["offset_store"] == "postgres"
    assert ("psycopg" in (project / "pyproject.toml").read_text()) is wants_psycopg


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"baked_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while building a class
    spec.loader.exec_module(module)
    return module


def test_the_template_offers_exactly_the_formats_connectors_and_stores_the_package_lists(
    baked_projects: dict[str, Path],
) -> None:
    # One list each, in the package; cookiecutter.json must offer the same, in order (its
    # first choice is the default). The hooks read the package's lists themselves.
    project = baked_projects[combination_id(DEFAULT_COMBINATION)]
    formats = _load(project / PACKAGE / "sink" / "formats.py")
    connectors = _load(project / PACKAGE / "source" / "connectors.py")
    registry = _load(project / PACKAGE / "ledger" / "registry.py")
    assert list(formats.SINK_FORMATS) == CHOICES["sink_format"]
    assert list(connectors.CONNECTORS) == CHOICES["kafka_connector"]
    assert set(connectors.SOURCE_FORMATS) == set(connectors.CONNECTORS)
    assert list(registry.STORE_NAMES) == CHOICES["offset_store"]
    assert list(registry.STORES) == CHOICES["offset_store"]
    for name, kind in registry.STORES.items():
        baked = baked_projects[combination_id({**DEFAULT_COMBINATION, "offset_store": name})]
        assert (baked / PACKAGE / "ledger" / f"{kind.module}.py").is_file(), name
        assert (baked / "tests" / "contract" / f"test_{kind.module}.py").is_file(), name
