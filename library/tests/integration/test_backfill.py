"""`upgrade backfill` on real Kafka: the history of a new metric, exactly, once.

Version 1 counts page views in 10-minute windows sliding every 5; version 2 adds
``approx_count_distinct``, ``min`` and ``max`` of the user (``conftest.py``: the upgrade is
proved exact once per run, and backfilled here on a copy, since `verify`'s tests inspect it
too). Generation 1's windows lack the new metrics. A kill -9 after the backfill's rows are
written and before its commit leaves the output as it was; the backfill run again completes,
and must give every window of the history version 2's values over exactly the events
generation 1 counted, which the plugin's oracle computes from the events alone; a reader must
see each window once.
The oracle reads the output itself: each generation's directory through its own
``_spark_metadata``, each backfill's commit as JSON, and applies the commit's ranges in a few
lines of its own.

Two more histories in which the stream did not count every event, each a pipeline of its
own, played here run by run:

- **Late events.** Generation 1's second run reads three events after its watermark passed
  some of their windows' ends, so the stream dropped them from those windows (and counted
  one of them in a window still open). The backfill must leave them out exactly as the
  stream did: the oracle decides which events count from the runs this test made, and the
  watermark before each. Its negative control, a backfill made to count the late events, on
  a copy of the pipeline, is caught by the oracle and by `verify`.
- **A naive restart.** Generation 2 starts where generation 1 stopped, replaying nothing:
  the windows open at the stop lose events, and `verify` says so. The backfill rewrites
  them with every event (those generation 2 never read too): `verify` then finds every
  window exact, and the events' true counts agree.

Then retention that deleted the oldest records (the windows that lost one are named and left
as they were), and the same upgrade into one **Delta table**: a kill -9 inside the Spark job
that writes the backfill's rows (one task's file written, no commit) leaves the table as
every reader saw it; run again, one commit replaces the rows of generation 1's windows, which
delta-rs, with no Spark, reads once each and equal to the oracle.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._driver_process as driver_process
import support.kill_in_backfill as kill_in_backfill
from pyspark_kafka_upgrade._adapters.ledger.opening import open_store
from pyspark_kafka_upgrade._adapters.spark import backfill_values
from pyspark_kafka_upgrade._application.backfill import BACKFILL_STEPS, BackfillRequest, backfill
from pyspark_kafka_upgrade._application.run.run_command import RunRequest, run_pipeline
from pyspark_kafka_upgrade._application.upgrade.commands import apply_command
from pyspark_kafka_upgrade._application.verify import VerifyRange, verify_pipeline
from pyspark_kafka_upgrade._core.reconciliation.verify_words import render_report
from pyspark_kafka_upgrade._core.settings import Settings, load_settings
from pyspark_kafka_upgrade._domain.records.backfill_report import BackfillReport, OlderQuery
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.verification import (
    PairState,
    Status,
    WindowFinding,
)
from pyspark_kafka_upgrade._domain.values.layout import table_location
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing import (
    KafkaBackend,
    ProofReport,
    create_topic,
    produce,
    unique_topic,
)
from pyspark_kafka_upgrade.testing._proof import (
    _RELATIVE,
    _close,
    _expected,
    _pipeline_overrides,
    _records,
)
from support.proofs import (
    BASE_MS,
    METRICS_ADDED,
    WINDOWS,
    copy_of,
    page_view,
    prove_metrics_added,
    settings_overrides,
)

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000
VERSION_2 = METRICS_ADDED
TIMEOUT_S = 240
SIGKILL_EXIT = -9
EVENTS = [page_view(minute) for minute in range(60)]
EVERYTHING = VerifyRange(from_ms=BASE_MS - 10 * MINUTE_MS)

# (window start ms, window end ms, keys): one row's identity, as the oracle writes it.
Row = tuple[int, int, tuple[object, ...]]


@pytest.fixture
def adding_metrics(upgrade_adding_metrics: ProofReport, tmp_path: Path) -> Settings:
    """A copy of the upgrade `verify`'s tests inspect too: a backfill changes it for good."""
    assert upgrade_adding_metrics.settings is not None
    return copy_of(upgrade_adding_metrics.settings, tmp_path / "copy")


def test_a_backfill_gives_every_window_of_the_history_the_new_metrics_once(
    upgrade_adding_metrics: ProofReport,
    adding_metrics: Settings,
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    settings = adding_metrics
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
    assert list((_local(settings.pipeline.root) / "output" / "backfill-1").glob("*.parquet"))
    assert read_as_a_reader(spark, settings) == before

    # Run again: it completes, under the number the dead attempt had.
    done = backfill(settings, BackfillRequest(), spark=spark)

    found = read_as_a_reader(spark, settings)
    assert done.backfill == 1 and done.windows, done
    history_backfilled(spark, settings, done, found, upgrade_adding_metrics.plan.watermark_ms)

    again = backfill(settings, BackfillRequest(), spark=spark)
    assert again.backfill is None and again.windows == 0, again
    assert read_as_a_reader(spark, settings) == found


# -- Late events: generation 1 dropped them, the backfill leaves them out -------------------

PARTITIONS = 2
DELAY_MS = 5 * MINUTE_MS  # WINDOWS' watermark delay


def late_view(minute: int, article: str, user: str) -> dict[str, object]:
    return {**page_view(minute), "article_id": article, "user_id": user}


# Generation 1's first run reads minutes 0-36: its watermark W1 is 10:31, so the windows
# ending at or before 10:30 are written. Its second run reads three events late for those
# windows, then minutes 37-43: W is 10:38. Generation 2 (the upgrade) reads the rest.
RUN_1 = [page_view(minute) for minute in range(37)]
LATE = [
    late_view(2, "a2", "u9"),  # windows ending 10:05 and 10:10, both written: dropped from both
    late_view(12, "late", "u0"),  # ending 10:15 and 10:20: dropped, and no other event has its key
    late_view(27, "a0", "u7"),  # ending 10:30: dropped; ending 10:35: still open, counted
]
RUN_2 = [*LATE, *(page_view(minute) for minute in range(37, 44))]
RUN_3 = [page_view(minute) for minute in range(44, 60)]


@dataclasses.dataclass(frozen=True)
class LatePipeline:
    settings: Settings  # version 2's
    w1: int  # generation 1's watermark after its first run: the late events' bound
    w: int  # after its second: the plan's W


@pytest.fixture(scope="module")
def late(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path_factory: pytest.TempPathFactory
) -> LatePipeline:
    return play_late_runs(spark, *pipeline(kafka_backend, tmp_path_factory.mktemp("backfill-late")))


def play_late_runs(spark: SparkSession, version_1: Settings, version_2: Settings) -> LatePipeline:
    """Generation 1 reads ``RUN_1``, then ``RUN_2`` with its late events; the upgrade to
    ``version_2``, which reads ``RUN_3``."""
    send(version_1, RUN_1)
    run(version_1, spark)
    send(version_1, RUN_2)
    run(version_1, spark)
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    w1, w = watermark(RUN_1), watermark([*RUN_1, *RUN_2])
    # The watermark the oracle expects before the late events' batch, and at the stop.
    assert applied_plan(version_2).watermark_ms == w, "generation 1 did not end caught up"
    send(version_1, RUN_3)
    run(version_2, spark)
    return LatePipeline(version_2, w1, w)


def late_oracle(pipeline: LatePipeline) -> dict[Row, dict[str, object]]:
    """Every window closed, with version 2's metrics over the events its owner counted."""
    settings = pipeline.settings
    final_w = watermark([*RUN_1, *RUN_2, *RUN_3])
    # Generation 1 wrote the windows ending at or before W. Its first batch judged nothing
    # late; the batch that read the second run judged by W1. Generation 2 wrote the rest,
    # from its first batch, which judged nothing late (its replay filter drops the others).
    return {
        **counted_by_owner(
            settings, [(RUN_1, 0), (RUN_2, pipeline.w1)], after_ms=BASE_MS, through_ms=pipeline.w
        ),
        **counted_by_owner(
            settings, [([*RUN_1, *RUN_2, *RUN_3], 0)], after_ms=pipeline.w, through_ms=final_w
        ),
    }


def late_rows(pipeline: LatePipeline) -> set[Row]:
    """Each window and key of generation 1 that a late event belongs to."""
    return set(_expected(pipeline.settings, LATE, through_ms=pipeline.w1, after_ms=None))


def test_a_backfill_leaves_out_the_events_generation_1_read_late(
    late: LatePipeline, spark: SparkSession
) -> None:
    settings = late.settings
    expected = late_oracle(late)
    before = read_as_a_reader(spark, settings)
    # The stream dropped what the oracle says it dropped: version 1's counts agree already.
    assert {row: values["views"] for row, (_, values) in before.items()} == {
        row: values["views"] for row, values in expected.items()
    }

    done = backfill(settings, BackfillRequest(), spark=spark)

    found = read_as_a_reader(spark, settings)
    old = {row[:2] for row in expected if row[1] <= late.w}
    assert done.backfill == 1 and done.windows == len(old), done
    # Left only the windows still open to generation 2 (not written yet: nothing to rewrite).
    # Nothing left: an open window is its owner's to write, never reported as left.
    assert done.left == (), done
    differences = mismatches(settings, expected, found)
    assert not differences, "\n".join(differences.values())
    assert {found[row][0] for row in expected if row[1] <= late.w} == {1}

    verified = verify_pipeline(settings, EVERYTHING, spark=spark)
    assert verified.ok, render_report(verified)
    # The windows and keys with a late event are late by design; every other one is exact.
    dropped = {(start, keys) for start, _, keys in late_rows(late)}
    assert {identity(f) for f in verified.findings if f.status is Status.LATE} == dropped
    assert verified.count(Status.EXACT) == len({(s, k) for s, _, k in expected} - dropped)


def test_a_backfill_that_counts_the_late_events_is_caught_by_the_oracle_and_verify(
    late: LatePipeline,
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The negative control: the backfill made to count the pairs the stream dropped as
    late, on a copy of the pipeline as the stream left it (the fixture's stays as it is)."""
    copy = copy_of(late.settings, tmp_path / "copy")
    widened = (*backfill_values.COUNTED_STATES, PairState.LATE)
    monkeypatch.setattr(backfill_values, "COUNTED_STATES", widened)

    done = backfill(copy, BackfillRequest(), spark=spark)

    assert done.backfill == 1, done
    # Each window and key with a late event, and only those, holds what it should not.
    owed, found = late_oracle(late), read_as_a_reader(spark, copy)
    wrong = mismatches(copy, owed, found)
    assert set(wrong) == late_rows(late), "\n".join(wrong.values())
    verified = verify_pipeline(copy, EVERYTHING, spark=spark)
    assert not verified.ok, render_report(verified)
    failing = {identity(f): f.status for f in verified.findings if f.status.fails}
    dropped = {(start, keys) for start, _, keys in late_rows(late)}
    assert failing == dict.fromkeys(dropped, Status.DIFFERENT), render_report(verified)
    # Each finding shows what the backfill owed and wrote, in the backfill's metrics.
    metrics = [metric.name for metric in copy.aggregation.metric_specs]
    for finding in verified.findings:
        row = (finding.window_start_ms, finding.window_end_ms, tuple(finding.keys.values()))
        assert list(finding.expected) == metrics, finding
        assert finding.expected == owed.get(row, finding.expected), finding
        assert finding.written == {name: found[row][1][name] for name in metrics}, finding


# -- A window change: the new grid's history before the split ---------------------------------

# Version 2 adds the metrics and counts in 10-minute tumbling windows. The plan splits the
# generations in event time at E = 10:35, the end of the last window generation 1 wrote
# (W = 10:38): generation 2 counts events from E on. Before the backfill, its grid's windows
# ending by 10:30 were never written, and 10:30-10:40 was written from its events after E only.
# Windows starting on the hour's tens are on both grids: generation 1 wrote them, and the
# backfill's rows replace its rows there; generation 1's other windows stay as they were.
TUMBLING = ["window.duration=10 minutes", "window.slide=10 minutes"]


@pytest.fixture(scope="module")
def changed(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Settings, LatePipeline]:
    version_1, version_2 = pipeline(
        kafka_backend, tmp_path_factory.mktemp("backfill-window"), *TUMBLING
    )
    return version_1, play_late_runs(spark, version_1, version_2)


def test_a_backfill_after_a_window_change_gives_the_new_grid_its_history_before_the_split(
    changed: tuple[Settings, LatePipeline], spark: SparkSession
) -> None:
    version_1, played = changed
    settings = played.settings
    split = applied_plan(settings).replay_filter.event_time_from_ms
    assert split == BASE_MS + 35 * MINUTE_MS, applied_plan(settings).replay_filter
    ten = settings.window.spec.slide_ms
    # The new grid: what generation 1's batches counted, each judged late by the watermark
    # before it, in the windows ending by the split; every event in the windows after it
    # (generation 1 read the events before E in order, generation 2's first batch judged
    # nothing late).
    final_w = watermark([*RUN_1, *RUN_2, *RUN_3])
    by_generation_1 = [(RUN_1, 0), (RUN_2, played.w1)]
    last_before = split - split % ten
    new_grid = {
        **counted_by_owner(settings, by_generation_1, after_ms=BASE_MS, through_ms=last_before),
        **counted_by_owner(
            settings, [([*RUN_1, *RUN_2, *RUN_3], 0)], after_ms=last_before, through_ms=final_w
        ),
    }
    # Generation 1's own windows of the old grid, version 1's metrics: those not on the
    # new grid stay as it wrote them.
    old_grid = {
        row: values
        for row, values in counted_by_owner(
            version_1, by_generation_1, after_ms=BASE_MS, through_ms=played.w
        ).items()
        if row[0] % ten != 0
    }
    before = read_as_a_reader(spark, settings)
    # Before: generation 1's rows there (its grid holds them too) lack the new metrics, and
    # generation 2 counted only its own events in the window across the split.
    assert {before[row][0] for row in new_grid if row[1] <= last_before} == {1}
    assert all(before[row][1].get("users") is None for row in new_grid if row[1] <= last_before)
    across = [row for row in new_grid if row[0] == last_before]
    assert all(before[row][1]["views"] < new_grid[row]["views"] for row in across), across

    done = backfill(settings, BackfillRequest(), spark=spark)

    # The new grid's windows ending by 10:40: three before E, one across it.
    assert done.older_queries == (
        OlderQuery(1, ("users", "first_user", "last_user"), version_1.window.spec),
    ), done
    assert done.backfill == 1 and done.windows == 4, done
    assert [(r.after_ms, r.through_ms) for r in done.ranges] == [
        (BASE_MS, split + 5 * MINUTE_MS)
    ], done
    # Nothing left: an open window is its owner's to write, never reported as left.
    assert done.left == (), done
    found = read_as_a_reader(spark, settings)
    expected = {**old_grid, **new_grid}
    differences = mismatches(settings, expected, found)
    assert not differences, "\n".join(differences.values())
    # Each row is marked with the generation that owns the window's end: 1 by the split, 2
    # across it.
    assert {found[row][0] for row in new_grid if row[1] <= last_before} == {1}
    assert {found[row][0] for row in new_grid if row[1] > last_before} == {2}

    verified = verify_pipeline(settings, EVERYTHING, spark=spark)
    assert verified.ok, render_report(verified)
    dropped = {
        (start, keys)
        for grid in (version_1, settings)
        for start, _, keys in _expected(grid, LATE, through_ms=played.w1, after_ms=None)
        if grid is settings or start % ten != 0
    }
    assert {identity(f) for f in verified.findings if f.status is Status.LATE} == dropped
    assert verified.count(Status.EXACT) == len({(s, k) for s, _, k in expected} - dropped)

    again = backfill(settings, BackfillRequest(), spark=spark)
    assert again.backfill is None and again.windows == 0, again


# -- A naive restart: the windows it lost, repaired --------------------------------------------


@pytest.fixture(scope="module")
def restarted(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path_factory: pytest.TempPathFactory
) -> Settings:
    """Version 2 started where version 1 stopped (its plan rewritten so), replaying nothing."""
    version_1, version_2 = pipeline(kafka_backend, tmp_path_factory.mktemp("backfill-naive"))
    send(version_1, EVENTS[:40])
    run(version_1, spark)
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    restart_naively(version_2)
    send(version_1, EVENTS[40:])
    run(version_2, spark)
    return version_2


def test_a_backfill_repairs_the_windows_a_naive_restart_lost(
    restarted: Settings, spark: SparkSession
) -> None:
    settings = restarted
    expected = oracle(settings)  # every event counted once: what the stream should have written
    before = read_as_a_reader(spark, settings)
    # The rows the restart lost or left short: their events before the stop never read.
    short = {
        row
        for row, values in expected.items()
        if before.get(row, (0, {}))[1].get("views") != values["views"]
    }
    verified = verify_pipeline(settings, EVERYTHING, spark=spark)
    assert short and not verified.ok
    failing = {identity(f): f.status for f in verified.findings if f.status.fails}
    lost = {(start, keys) for start, _, keys in short}
    assert failing == dict.fromkeys(lost, Status.LOST), render_report(verified)
    # Each lost window names events generation 2 never read.
    for finding in verified.findings:
        assert PairState.SKIPPED in {event.state for event in finding.events}, finding

    done = backfill(settings, BackfillRequest(), spark=spark)

    # Generation 1's windows (they lack the new metrics) and the lost ones; none else.
    w = watermark(EVENTS[:40])
    rewritten = {end for _, end, _ in expected if any(r.holds(end) for r in done.ranges)}
    assert done.backfill == 1 and done.windows == len(rewritten), done
    # Nothing left: an open window is its owner's to write, never reported as left.
    assert done.left == (), done
    assert rewritten == {end for _, end, _ in expected if end <= w} | {end for _, end, _ in short}
    differences = mismatches(settings, expected, read_as_a_reader(spark, settings))
    assert not differences, "\n".join(differences.values())
    verified = verify_pipeline(settings, EVERYTHING, spark=spark)
    assert verified.ok, render_report(verified)
    assert verified.count(Status.EXACT) == len(expected), render_report(verified)


# -- Retention: the windows whose records are partly gone, named and left as they were ------

# Generation 1 reads the first 40 minutes run by run, a batch each: a batch's event times
# are what the ledger knows of the records it read.
CHUNKS = (EVENTS[:12], EVENTS[12:24], EVENTS[24:40])
# Retention deletes the three oldest records of partition 0 (round robin: minutes 0, 2, 4).
DELETED_BEFORE = 3


def test_a_backfill_leaves_the_windows_retention_took_records_of_as_they_were(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    version_1, version_2 = pipeline(kafka_backend, tmp_path)
    for chunk in CHUNKS:
        send(version_1, chunk)
        run(version_1, spark)
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    send(version_1, EVENTS[40:])
    run(version_2, spark)
    topic = version_2.kafka.topics[0]
    admin = AdminClient({"bootstrap.servers": kafka_backend.bootstrap_servers})
    for future in admin.delete_records([TopicPartition(topic, 0, DELETED_BEFORE)]).values():
        future.result(timeout=30)
    gone = [_event_ms(event) for event in EVENTS[: 2 * DELETED_BEFORE : PARTITIONS]]
    before = read_as_a_reader(spark, version_2)

    planned = backfill(version_2, BackfillRequest(plan_only=True), spark=spark)

    # The plan names what retention took, and the event times it may have held.
    assert [(d.topic, d.partition, d.first, d.end) for d in planned.deleted] == [
        (topic, 0, 0, DELETED_BEFORE)
    ], planned
    assert all(
        any(low <= moment <= high for low, high in planned.partial_event_times) for moment in gone
    ), planned
    assert not list((_local(version_2.pipeline.root) / "output").glob("backfill-*"))

    done = backfill(version_2, BackfillRequest(), spark=spark)

    after = read_as_a_reader(spark, version_2)
    expected = oracle(version_2)  # every event once: what a window holds when none is gone
    touched = {row for row in expected if any(row[0] <= ms < row[1] for ms in gone)}
    owned = {row for row in expected if any(r.holds(row[1]) for r in done.ranges)}
    assert done.backfill == 1 and owned, done
    # A window that lost a record is never backfilled with a partial value: named, untouched.
    assert not touched & owned, sorted(touched & owned)
    assert {row: after[row] for row in touched} == {row: before[row] for row in touched}
    assert all(after[row][1].get("users") is None for row in touched), "a partial value written"
    left = {(w.window_start_ms, w.window_end_ms) for w in done.left_sample}
    assert {row[:2] for row in touched} <= left, done.left_sample
    assert {w.reason for w in done.left_sample} == {backfill_values.RETENTION}, done
    assert [(w.reason, w.windows) for w in done.left] == [(backfill_values.RETENTION, len(left))]
    # Every other window of generation 1 is backfilled, exactly.
    w = watermark(EVENTS[:40])
    assert {row[:2] for row in expected if row[1] <= w} == {row[:2] for row in owned} | left
    differences = mismatches(version_2, {row: expected[row] for row in owned}, after)
    assert not [text for row, text in differences.items() if row in owned], differences


# -- The Delta table: one commit replaces the windows' rows ---------------------------------


@pytest.fixture(scope="module")
def upgrade_into_a_table(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path_factory: pytest.TempPathFactory
) -> ProofReport:
    return prove_metrics_added(
        spark,
        kafka_backend,
        tmp_path_factory.mktemp("backfill-delta"),
        "sink.format=delta",
        # The pykafka source whatever the connector under test: CI runs the file sink's
        # backfills on the built-in one, so between them both connectors' reads are proven.
        "kafka.connector=python",
    )


def test_a_backfill_of_the_delta_table_is_one_commit_and_a_kill_mid_write_changes_nothing(
    upgrade_into_a_table: ProofReport,
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = upgrade_into_a_table.settings
    assert settings is not None
    table = table_location(settings.pipeline.root)
    before, version = table_as_a_reader(table, settings), DeltaTable(table).version()
    assert any(values.get("users") is None for _, values in before.values()), "nothing to fill"

    # Killed inside the Spark job that writes the rows: one task's file is in the table's
    # directory, the commit is not. Every reader of the table sees it as it was.
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv(kill_in_backfill.MARKS_ENV_VAR, str(marks))
    killed = driver_process.DriverProcess(
        [
            kill_in_backfill.MID_WRITE,
            *as_options(settings_overrides(settings)),
            "upgrade",
            "backfill",
            # One task at a time: the first task's file is whole when the second one dies.
            "--master=local[1]",
        ],
        tmp_path,
        module="support.kill_in_backfill",
    )
    assert killed.wait(TIMEOUT_S) == SIGKILL_EXIT, killed.output
    assert (marks / "killed").is_file(), killed.output
    live = {_local(unquote(uri)) for uri in DeltaTable(table).file_uris()}
    data = [path for path in _local(table).rglob("*.parquet") if "_delta_log" not in path.parts]
    assert [path for path in data if path not in live], "the killed write left no file"
    assert DeltaTable(table).version() == version
    assert table_as_a_reader(table, settings) == before

    done = backfill(settings, BackfillRequest(), spark=spark)

    # One commit: the rows of generation 1's windows replaced, every window once.
    assert done.backfill == 1, done
    assert done.committed_in == f"version {version + 1} of the Delta table {table}", done
    assert DeltaTable(table).version() == version + 1
    (last,) = DeltaTable(table).history(limit=1)
    assert json.loads(last["userMetadata"])["backfill"] == 1, last
    found = table_as_a_reader(table, settings)
    history_backfilled(spark, settings, done, found, upgrade_into_a_table.plan.watermark_ms)

    # Run again: nothing left, no commit.
    again = backfill(settings, BackfillRequest(), spark=spark)
    assert again.backfill is None and again.windows == 0, again
    assert DeltaTable(table).version() == version + 1


def table_as_a_reader(table: str, settings: Settings) -> dict[Row, tuple[int, dict[str, Any]]]:
    """Each window and key in the Delta table, as delta-rs (no Spark) reads it. Two rows for
    one identity fail."""
    keys = settings.aggregation.keys
    rows: dict[Row, tuple[int, dict[str, Any]]] = {}
    for row in DeltaTable(table).to_pyarrow_table().to_pylist():
        start, end = _ms(row["window_start"]), _ms(row["window_end"])
        identity = (start, end, tuple(row[key] for key in keys))
        assert identity not in rows, f"{identity} read twice"
        rows[identity] = (int(row.pop("generation")), row)
    return rows


def as_options(overrides: list[str]) -> list[str]:
    return [item for setting in overrides for item in ("--set", setting)]


# -- The pipelines, run by run -----------------------------------------------------------------


def pipeline(
    kafka_backend: KafkaBackend, directory: Path, *changes: str
) -> tuple[Settings, Settings]:
    """Version 1's and version 2's settings of a pipeline of its own, in ``directory``;
    ``changes``: more settings of version 2."""
    bootstrap = kafka_backend.bootstrap_servers
    topic = unique_topic("backfill")
    create_topic(bootstrap, topic, PARTITIONS)
    base = [*_pipeline_overrides(PROJECT, directory, bootstrap, topic), *WINDOWS]
    return (
        load_settings(PROJECT, env={}, overrides=base).settings,
        load_settings(PROJECT, env={}, overrides=[*base, VERSION_2, *changes]).settings,
    )


def send(settings: Settings, events: Sequence[Mapping[str, object]]) -> None:
    records = _records(settings, events, PARTITIONS)
    produce(settings.kafka.bootstrap_servers, settings.kafka.topics[0], records)


def run(settings: Settings, spark: SparkSession) -> None:
    """One run until caught up, in this process."""
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)


def applied_plan(settings: Settings) -> UpgradePlan:
    with open_store(settings.ledger) as store:
        record = store.generation(settings.pipeline.name, 2)
    assert record is not None and record.plan is not None
    return UpgradePlan.from_json(record.plan)


def restart_naively(settings: Settings) -> None:
    """Rewrite generation 2's applied plan to restart where generation 1 stopped."""
    with open_store(settings.ledger) as store:
        record = store.generation(settings.pipeline.name, 2)
        assert record is not None and record.plan is not None
        plan = UpgradePlan.from_json(record.plan)
        naive = dataclasses.replace(
            plan,
            partitions=tuple(
                dataclasses.replace(
                    p, restart_offset=p.old_end_offset, quarantine_offset=p.old_end_offset
                )
                for p in plan.partitions
            ),
        )
        store.record_generation(dataclasses.replace(record, plan=naive.to_json()))


# -- The oracle: what a reader must see, from the events and the files alone -----------------


def oracle(settings: Settings) -> dict[Row, dict[str, object]]:
    """Every window the pipeline has closed, with version 2's metrics over its events (the
    events are in order: none is late)."""
    return _expected(settings, EVENTS, through_ms=watermark(EVENTS), after_ms=None)


def history_backfilled(
    spark: SparkSession,
    settings: Settings,
    done: BackfillReport,
    found: Mapping[Row, tuple[int, Mapping[str, Any]]],
    watermark_ms: int,
) -> None:
    """After the upgrade adding metrics and its backfill: generation 1's windows (ending at
    or before W) each rewritten, every row as the oracle says and marked with the
    generation whose events it counts, and `verify` finding every window exact."""
    expected = oracle(settings)
    old = {row[:2] for row in expected if row[1] <= watermark_ms}
    assert done.windows == len(old), (done.windows, sorted(old))
    differences = mismatches(settings, expected, found)
    assert not differences, "\n".join(differences.values())
    assert {found[row][0] for row in expected if row[1] <= watermark_ms} == {1}

    verified = verify_pipeline(settings, EVERYTHING, spark=spark)
    assert verified.ok, render_report(verified)
    assert verified.count(Status.EXACT) == len(expected), render_report(verified)


def counted_by_owner(
    settings: Settings,
    batches: Sequence[tuple[Sequence[Mapping[str, object]], int]],
    *,
    after_ms: int,
    through_ms: int,
) -> dict[Row, dict[str, object]]:
    """Each window ending in (after_ms, through_ms], with version 2's metrics over the events
    its owner counted. ``batches``: the events each batch read, with the watermark before it:
    the stream drops an event from its windows that ended at or before that watermark."""
    slide = settings.window.spec.slide_ms
    rows: dict[Row, dict[str, object]] = {}
    for end in range(after_ms - after_ms % slide + slide, through_ms + 1, slide):
        counted = [event for events, before in batches if end > before for event in events]
        rows.update(_expected(settings, counted, through_ms=end, after_ms=end - slide))
    return rows


def watermark(events: Sequence[Mapping[str, object]]) -> int:
    """The watermark once ``events`` are read: the newest event time less the delay."""
    return max(_event_ms(event) for event in events) - DELAY_MS


def mismatches(
    settings: Settings,
    expected: Mapping[Row, Mapping[str, object]],
    found: Mapping[Row, tuple[int, Mapping[str, Any]]],
) -> dict[Row, str]:
    """Each row a reader sees otherwise than ``expected``, and how."""
    wrong = {row: f"missing {row}" for row in expected if row not in found}
    wrong |= {row: f"not expected {row}: {found[row][1]}" for row in found if row not in expected}
    for row, values in expected.items():
        if row in found:
            differences = [
                f"{name} is {found[row][1].get(name)!r}, expected {value!r}"
                for name, value in values.items()
                if not _close(
                    value, found[row][1].get(name), _RELATIVE.get(_function(settings, name), 0.0)
                )
            ]
            if differences:
                wrong[row] = f"{row}: {', '.join(differences)}"
    return wrong


def identity(finding: WindowFinding) -> tuple[int, tuple[object, ...]]:
    return (finding.window_start_ms, tuple(finding.keys.values()))


def read_as_a_reader(
    spark: SparkSession, settings: Settings
) -> dict[Row, tuple[int, dict[str, Any]]]:
    """Each window and key as a reader must see it: from the latest backfill whose commit
    names it, else from the generation that wrote it. Two rows for one identity fail."""
    output = _local(settings.pipeline.root) / "output"
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


def _event_ms(event: Mapping[str, object]) -> int:
    return _ms(datetime.fromisoformat(str(event["event_time"]).replace("Z", "+00:00")))


def _local(location: str) -> Path:
    return Path(location.removeprefix("file:"))


def _ms(moment: datetime) -> int:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return round(aware.timestamp() * 1000)
