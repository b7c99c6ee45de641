"""`upgrade backfill` on real Kafka: the history of a new metric, exactly, once.

Version 1 counts page views in 10-minute windows sliding every 5; version 2 adds
``approx_count_distinct``, ``min`` and ``max`` of the user (``conftest.py``: the upgrade is
proved exact once, and each test here backfills a copy of it). Generation 1's windows lack the
new metrics. The backfill must give
every window of the history version 2's values over exactly the events generation 1 counted,
which the plugin's oracle computes from the events alone; a reader must see each window once.
The oracle reads the output itself: each generation's directory through its own
``_spark_metadata``, each backfill's commit as JSON, and applies the commit's ranges in a few
lines of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._driver_process as driver_process
from pyspark_kafka_upgrade._application.backfill import BACKFILL_STEPS, BackfillRequest, backfill
from pyspark_kafka_upgrade._application.verify import VerifyRange, verify_pipeline
from pyspark_kafka_upgrade._core.reconciliation.verify_words import render_report
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.records.verification import Status
from pyspark_kafka_upgrade.testing import ProofReport
from pyspark_kafka_upgrade.testing._proof import _RELATIVE, _close, _expected
from support.proofs import BASE_MS, copy_of, page_view, settings_overrides


def as_options(overrides: list[str]) -> list[str]:
    return [item for setting in overrides for item in ("--set", setting)]


def _local(uri: str) -> str:
    return str(uri).removeprefix("file:")


pytestmark = pytest.mark.integration

MINUTE_MS = 60_000
EVENTS = [page_view(minute) for minute in range(60)]
TIMEOUT_S = 240
SIGKILL_EXIT = -9
EVERYTHING = VerifyRange(from_ms=BASE_MS - 10 * MINUTE_MS)

# (window start ms, window end ms, keys): one row's identity, as the oracle writes it.
Row = tuple[int, int, tuple[object, ...]]


@pytest.fixture
def pipeline(upgrade_adding_metrics: ProofReport, tmp_path: Path) -> Settings:
    """A copy of the upgrade `verify`'s tests inspect too: a backfill changes it for good."""
    assert upgrade_adding_metrics.settings is not None
    return copy_of(upgrade_adding_metrics.settings, tmp_path)


def test_a_backfill_gives_every_window_of_the_history_the_new_metrics_once(
    upgrade_adding_metrics: ProofReport, pipeline: Settings, spark: SparkSession, tmp_path: Path
) -> None:
    settings = pipeline
    before = read_as_a_reader(spark, settings)
    # Generation 1's windows lack what version 2 added: the gap the backfill closes.
    assert any(values.get("users") is None for _, values in before.values()), "nothing to fill"

    # Killed once its rows are written, before its commit: a reader sees the output as it was.
    killed = driver_process.DriverProcess(
        [BACKFILL_STEPS[0], *as_options(settings_overrides(settings)), "upgrade", "backfill"],
        tmp_path,
        module="support.kill_in_backfill",
    )
    assert killed.wait(TIMEOUT_S) == SIGKILL_EXIT, killed.output
    assert f"killed after {BACKFILL_STEPS[0]}" in killed.output
    assert list((Path(_local(settings.pipeline.root)) / "output" / "backfill-1").glob("*.parquet"))
    assert read_as_a_reader(spark, settings) == before

    # Run again: it completes, under the number the dead attempt had.
    done = backfill(settings, BackfillRequest(), spark=spark)

    expected = oracle(settings)
    found = read_as_a_reader(spark, settings)
    watermark = upgrade_adding_metrics.plan.watermark_ms
    assert done.backfill == 1 and done.windows, done
    # Generation 1 wrote the windows ending at or before W; each was rewritten.
    old = {row[:2] for row in expected if row[1] <= watermark}
    assert done.windows == len(old), (done.windows, sorted(old))
    assert set(found) == set(expected), (
        f"missing {sorted(set(expected) - set(found))}, not expected "
        f"{sorted(set(found) - set(expected))}"
    )
    differences = [
        f"{row}: {name} is {found[row][1].get(name)!r}, expected {value!r}"
        for row, values in expected.items()
        for name, value in values.items()
        if not _close(value, found[row][1].get(name), _RELATIVE.get(_function(settings, name), 0.0))
    ]
    assert not differences, "\n".join(differences)
    # Each backfilled row keeps the generation whose events it counts.
    assert {found[row][0] for row in expected if row[1] <= watermark} == {1}

    verified = verify_pipeline(settings, EVERYTHING, spark=spark)
    assert verified.ok, render_report(verified)
    assert verified.count(Status.EXACT) == len(expected), render_report(verified)

    again = backfill(settings, BackfillRequest(), spark=spark)
    assert again.backfill is None and again.windows == 0, again
    assert read_as_a_reader(spark, settings) == found


# -- The oracle: what a reader must see, from the events and the files alone -----------------


def oracle(settings: Settings) -> dict[Row, dict[str, object]]:
    """Every window the pipeline has closed, with version 2's metrics over its events (the
    events are in order: none is late)."""
    newest = max(
        _ms(datetime.fromisoformat(str(event["event_time"]).replace("Z", "+00:00")))
        for event in EVENTS
    )
    final_w = newest - settings.window.spec.watermark_delay_ms
    return _expected(settings, EVENTS, through_ms=final_w, after_ms=None)


def read_as_a_reader(
    spark: SparkSession, settings: Settings
) -> dict[Row, tuple[int, dict[str, Any]]]:
    """Each window and key as a reader must see it: from the latest backfill whose commit
    names it, else from the generation that wrote it. Two rows for one identity fail."""
    output = Path(str(settings.pipeline.root).removeprefix("file:")) / "output"
    keys = settings.aggregation.keys
    commits = _commits(output)
    rows: dict[Row, tuple[int, dict[str, Any]]] = {}

    def owner(start: int, end: int) -> int | None:
        found = None
        for number, commit, _ in commits:
            size, slide = commit["window"]["duration_ms"], commit["window"]["slide_ms"]
            if (
                end - start == size
                and start % slide == 0
                and any(part["after_ms"] < end <= part["through_ms"] for part in commit["ranges"])
            ):
                found = number
        return found

    def take(source: list[Any], backfill: int | None) -> None:
        for row in source:
            start, end = _ms(row["window_start"]), _ms(row["window_end"])
            if owner(start, end) != backfill:
                continue
            identity = (start, end, tuple(row[key] for key in keys))
            assert identity not in rows, f"{identity} read twice"
            values = row.asDict()
            rows[identity] = (int(values.pop("generation")), values)

    for directory in sorted(output.glob("generation-*")):
        generation = int(directory.name.split("-")[1])
        found = spark.read.parquet(str(directory)).collect()
        take([_with_generation(row, generation) for row in found], None)
    for number, commit, path in commits:
        files = [str(path / name) for name in commit["files"]]
        take(spark.read.parquet(*files).collect() if files else [], number)
    return rows


def _commits(output: Path) -> list[tuple[int, Mapping[str, Any], Path]]:
    found = []
    for path in output.glob("backfill-*"):
        commit = path / "_backfill.json"
        if commit.exists():
            document = json.loads(commit.read_text())
            found.append((int(document["backfill"]), document, path))
    return sorted(found, key=lambda item: item[0])


def _with_generation(row: Any, generation: int) -> Any:
    from pyspark.sql import Row as SparkRow

    values = row.asDict()
    values["generation"] = generation
    return SparkRow(**values)


def _function(settings: Settings, name: str) -> str:
    return next(m.function for m in settings.aggregation.metric_specs if m.name == name)


def _ms(moment: datetime) -> int:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return round(aware.timestamp() * 1000)
