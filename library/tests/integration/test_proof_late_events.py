"""Late events: a restart counts every event whose window ends after W exactly once.

FACTS, "What a restart can promise": a new generation drops every (event, window) pair
whose window ended at or before W, the watermark of the old generation's last committed
batch, because the old generation wrote those windows. An event that arrives after the
stop and belongs only to such windows is therefore dropped: late, as an uninterrupted run
would have judged it too. The honest guarantee is what this file checks, on real Kafka:

- every event whose window ends after W is counted exactly once across the generations;
- nothing the old generation wrote is written again;
- the events dropped are exactly those whose windows ended at or before W, and which
  generation 1 never read; and the plan says how many before anything runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._oracle as oracle
import support.pipelines as pipelines
import support.plans as plans
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.ledger.opening import (
    open_store,
)
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._application.upgrade.commands import (
    plan_command,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.plan import (
    UpgradePlan,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from support.example import main

pytestmark = pytest.mark.integration

MINUTE_MS = pipelines.MINUTE_MS
DELAY_MS = 5 * MINUTE_MS  # pipelines' watermark_delay
GRID = oracle.Grid(size_ms=10 * MINUTE_MS)  # pipelines' tumbling 10-minute windows
ARTICLES = ["a1", "a2"]
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'

# Generation 1's stream, in minutes after 10:00: in order, but for two stragglers that are
# 3 minutes behind the newest event, within the 5-minute delay, so never late.
BEFORE_STOP = [*range(21), 17, *range(21, 35), 31.5, *range(35, 40)]


def at(minutes: float) -> int:
    return pipelines.BASE_MS + round(minutes * MINUTE_MS)


def run(settings: Settings, spark: SparkSession) -> None:
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)


def lags(events: list[oracle.Event]) -> list[int]:
    """How far each event is behind the newest produced before it (0 when it is the newest)."""
    newest, found = None, []
    for event in events:
        found.append(0 if newest is None else max(0, newest - event.time_ms))
        newest = event.time_ms if newest is None else max(newest, event.time_ms)
    return found


def test_a_restart_counts_each_event_once_and_drops_exactly_the_late_ones(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("proof-late")
    testing.create_topic(bootstrap, topic, 2)
    log = oracle.EventLog(bootstrap)
    before = log.produce(
        topic, pipelines.page_views(ARTICLES, [at(m) for m in BEFORE_STOP], partitions=2)
    )
    assert max(lags(before)) < DELAY_MS, "generation 1's stream must hold no late event"

    # Generation 1 reads it all, 10 records a batch, and stops with windows open.
    rate = "kafka.max_offsets_per_trigger=10"
    version_1 = pipelines.pipeline_settings(tmp_path, bootstrap, topic, rate)
    run(version_1, spark)
    root = version_1.pipeline.root
    w = oracle.final_watermark_ms(GenerationLayout(root, 1).checkpoint)
    assert len(oracle.committed_batches(GenerationLayout(root, 1).checkpoint)) >= 4
    closed_until = w - w % GRID.size_ms  # every window ending at or before it is written
    assert closed_until < w < closed_until + GRID.size_ms  # the window W falls in is open

    # After the stop: new events in order, stragglers within the delay, and events later
    # than the delay. Of the late ones, three belong only to windows generation 1 wrote (the
    # restart must drop them); one is just as late, but its window was still open at W.
    newest = at(BEFORE_STOP[-1])
    dropped_times = [closed_until - 1, at(5), closed_until - 3 * MINUTE_MS]
    open_but_late = closed_until
    after_times = [
        newest + MINUTE_MS,
        newest + 2 * MINUTE_MS,
        dropped_times[0],
        newest - MINUTE_MS,  # within the delay
        open_but_late,
        *(at(m) for m in range(42, 50)),
        dropped_times[1],
        at(49.5),  # within the delay
        *(at(m) for m in range(50, 60)),
        dropped_times[2],
    ]
    after = log.produce(topic, pipelines.page_views(ARTICLES, after_times, partitions=2))
    late_by_the_delay = {
        event.time_ms
        for event, lag in zip(after, lags([*before, *after])[len(before) :], strict=True)
        if lag > DELAY_MS
    }
    assert late_by_the_delay == {*dropped_times, open_but_late}
    # The rule the restart must follow, from the events alone: dropped exactly when every
    # window of the event ended at or before W.
    dropped = [event for event in after if GRID.last_end(event.time_ms) <= w]
    assert sorted(event.time_ms for event in dropped) == sorted(dropped_times)

    # The plan says how many it will drop before anything runs: it reads what is waiting.
    # Told not to read Kafka, it does not guess; it names only the event time they precede.
    overrides = pipelines.pipeline_overrides(tmp_path, bootstrap, topic, rate, VERSION_2)
    version_2 = load_settings(PROJECT, env={}, overrides=overrides).settings
    unscanned = plans.planned(
        plan_command(
            version_2, as_json=True, accept_data_loss=False, scan=False, spark=lambda: spark
        )
    )
    assert unscanned.late_records is None
    assert unscanned.late_before_event_ms == closed_until
    options = [f"--set={option}" for option in overrides]
    capsys.readouterr()
    assert main([*options, "upgrade", "plan"]) == 0
    shown = capsys.readouterr().out
    print(shown)  # the plan, as a user reads it: shown when the test fails
    assert f"Late records: {len(dropped)} of the {len(after)} records waiting" in shown
    assert main([*options, "upgrade", "apply"]) == 0
    with open_store(version_2.ledger, spark=lambda: spark) as store:
        recorded = store.generation(version_2.pipeline.name, 2)
    assert recorded is not None and recorded.plan is not None
    assert UpgradePlan.from_json(recorded.plan).watermark_ms == w
    assert UpgradePlan.from_json(recorded.plan).late_records == len(dropped)

    run(version_2, spark)

    w_2 = oracle.final_watermark_ms(GenerationLayout(root, 2).checkpoint)
    written = {
        "generation 1": oracle.written_rows(spark, GenerationLayout(root, 1).output),
        "generation 2": oracle.written_rows(spark, GenerationLayout(root, 2).output),
    }
    after_stop = set(after)
    # Every event whose window ends after W counted once; the late ones after the stop not.
    expected = oracle.expected_counts(
        log.events,
        GRID,
        written_through_ms=w_2,
        counted=lambda event, end: not (event in after_stop and end <= w),
    )
    comparison = oracle.Comparison(expected, written, log.events, GRID)
    comparison.check()

    # Nothing generation 1 wrote is written again.
    first = {(start, key) for start, key, _ in written["generation 1"]}
    second = {(start, key) for start, key, _ in written["generation 2"]}
    assert not first & second, comparison.report()
    assert all(start + GRID.size_ms > w for start, _ in second)

    # Against counting every event, the shortfall is exactly the dropped events, per
    # window and key: nothing else went missing, and nothing was counted too often.
    everything = oracle.Comparison(
        oracle.expected_counts(log.events, GRID, written_through_ms=w_2),
        written,
        log.events,
        GRID,
    )
    assert everything.shortfall == Counter(
        (GRID.starts(event.time_ms)[-1], event.key) for event in dropped
    ), everything.report()
    assert not everything.surplus, everything.report()
