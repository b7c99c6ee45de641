"""`make demo` works as README says: it upgrades without loss and checks that it did."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import pyspark_kafka_upgrade.testing._spark
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.values.catalog import SINK_FORMATS
from pyspark_kafka_upgrade._example.pipeline import PROJECT

DEMO = Path(__file__).resolve().parents[2] / "demo" / "upgrade_demo.py"


@pytest.mark.integration
# The connector the session tests (KAFKA_CONNECTOR): a run of the suite on each connector
# plays the demo on each, without playing it twice in one run.
@pytest.mark.parametrize("connector", [testing.connector_under_test(PROJECT)])
def test_the_demo_upgrades_without_loss_and_says_so(
    request: pytest.FixtureRequest, tmp_path: Path, connector: str
) -> None:
    if connector == "builtin":
        pyspark_kafka_upgrade.testing._spark.skip_unless_builtin_jars_can_be_had()
    # Requested only now, so that a skipped run starts no broker.
    backend: testing.KafkaBackend = request.getfixturevalue("kafka_backend")
    work = tmp_path / "demo"
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": backend.bootstrap_servers}
    env.pop("KAFKA_BACKEND", None)  # the demo takes the broker this session runs
    finished = subprocess.run(
        [sys.executable, str(DEMO), "--dir", str(work), "--connector", connector],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    shown = finished.stdout + finished.stderr[-3000:]
    assert finished.returncode == 0, shown
    assert "  windows written twice:           0\n" in finished.stdout, shown
    assert "  OK: no event lost, no window written twice.\n" in finished.stdout, shown
    # The backfill gives generation 1's windows the users version 2 added: after it, no
    # window `output show` prints lacks them (Kafka retains every record of the demo).
    plan_at = finished.stdout.index(f"{BACKFILL} --plan\n")
    backfill_at = finished.stdout.index(f"{BACKFILL}\n")
    assert plan_at < backfill_at, shown
    assert "backfill 1 committed (output directory backfill-1): rewrote 3 windows (9 rows)" in (
        finished.stdout
    ), shown
    before, after = (
        shown_rows(finished.stdout, "output show --limit 12"),
        shown_rows(finished.stdout, "output show --limit 20"),
    )
    assert any(row["users"] == "null" for row in before), before
    assert len(after) == 15 and {row["generation"] for row in after} == {"1", "2"}, after
    assert [row for row in after if row["users"] in ("null", "None", "")] == [], after
    # It ends with verify, on the pipeline's own records and the backfill's: every window
    # checked is exact.
    verify_at = finished.stdout.index("$ page_views_pipeline --config version-2.toml verify --from")
    assert backfill_at < verify_at, shown
    assert " 0 lost, 0 written twice, 0 different, " in finished.stdout, shown
    assert "OK: nothing lost, nothing written twice, nothing different." in finished.stdout
    # The refusal of version 2 on the old checkpoint is part of the lesson.
    assert "  (exit 3, " in finished.stdout, shown
    # What it leaves for the reader to look at and run commands on.
    assert (work / "version-1.toml").is_file() and (work / "version-2.toml").is_file()
    # The reviewed plan, applied by file.
    assert (work / "upgrade-plan.json").is_file()
    assert "$ page_views_pipeline --config version-2.toml upgrade apply upgrade-plan.json" in (
        finished.stdout
    ), shown
    # The contrast: the naive restart loses the window open at the upgrade, window by window.
    naive = re.search(r"naive restart: lost (\d+) events in (\d+) windows", finished.stdout)
    assert naive is not None and int(naive.group(1)) > 0, shown
    assert "  10:30-10:40    a-0001  " in finished.stdout and "(lost " in finished.stdout, shown
    assert "  upgrade:       lost 0, written twice 0\n" in finished.stdout, shown
    # The plan's picture, written where it says.
    picture = work / "upgrade-plan.png"
    assert f"The plan's picture: {picture}" in finished.stdout, shown
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 20_000
    # A watermark Spark has not moved yet is not shown as a time in 1970.
    assert "1970-01-01" not in finished.stdout, shown
    # Every `$` command of the generated project's upgrade guide is one the demo just ran.
    ran = {line for line in finished.stdout.splitlines() if line.startswith("$ ")}
    documented = guide_commands()
    assert len(documented) >= 6 and not documented - ran, sorted(documented - ran)
    assert sorted(p.name for p in (work / "data" / "output").iterdir()) == [
        "backfill-1",
        "generation-1",
        "generation-2",
    ]
    assert (work / "data" / "output" / "backfill-1" / "_backfill.json").is_file()


BACKFILL = "$ page_views_pipeline --config version-2.toml upgrade backfill"


def shown_rows(stdout: str, command: str) -> list[dict[str, str]]:
    """The rows the demo's ``command`` (an `output show`) printed, by column name."""
    lines = stdout[stdout.index(f"$ page_views_pipeline --config version-2.toml {command}\n") :]
    table = lines.splitlines()[1:]
    header = next(i for i, line in enumerate(table) if line.startswith("generation  window_start"))
    names = table[header].split()
    rows = []
    for line in table[header + 1 :]:
        if not line.strip() or line.startswith("  (exit"):
            break
        rows.append(dict(zip(names, line.split(), strict=True)))
    return rows


# The template's project guide, which teaches the procedure with the demo's commands.
GUIDE = DEMO.parents[2] / "{{cookiecutter.project_slug}}" / "docs" / "UPGRADE.md"


def guide_commands() -> set[str]:
    """The `$` lines of the guide's console blocks, with the default project's command."""
    text = GUIDE.read_text().replace("{{ cookiecutter.package_name }}", "page_views_pipeline")
    commands: set[str] = set()
    inside = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            inside = stripped == "```console"
        elif inside and stripped.startswith("$ "):
            commands.add(stripped)
    return commands


def test_the_demo_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "something").write_text("kept")
    finished = subprocess.run(
        [sys.executable, str(DEMO), "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 2
    assert f"{tmp_path} is not empty" in finished.stderr
    assert (tmp_path / "something").read_text() == "kept"


def demo_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("upgrade_demo", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("sink", SINK_FORMATS)
def test_both_versions_of_the_demo_run_on_the_sink_it_is_given(tmp_path: Path, sink: str) -> None:
    # What `--sink` (the template's `make demo-delta`) changes is the settings both versions
    # run with; its steps are the default's, played above, and a second play would cost CI
    # minutes it does not have.
    shared = {"bootstrap_servers": "localhost:9092", "topic": "t", "connector": "python"}
    for users in (False, True):
        written = demo_module().write_settings(
            tmp_path, f"v{users}.toml", {**shared, "sink": sink}, users=users
        )
        loaded = load_settings(PROJECT, written, env={}).settings
        assert loaded.sink.format == sink
        assert ("users" in loaded.aggregation.metrics) == users
