"""Partitions and topics added between versions are read from their earliest offsets, exactly,
and `verify` agrees.

A partition or topic generation 1 never read has no offset in its checkpoint. The upgrade
starts it at its earliest offset, so each of its records is counted in the new generation,
once, like the replayed records of the old partitions. The oracle checks every window and
key across both generations. `verify` must say the same from the ledger alone: a record of
an added partition in a window generation 1 wrote before the partition existed is late by
design ("outside its partitions"), never lost; one the new generation should have read and
did not is lost. The partitions grow before the upgrade, while generation 1 runs, and while
generation 2 runs, with each connector.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaException

# confluent_kafka.admin re-exports this class without __all__, which mypy --strict reports.
from confluent_kafka.admin import (  # type: ignore[attr-defined, unused-ignore]
    AdminClient,
    NewPartitions,
)
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._oracle as oracle
import pyspark_kafka_upgrade.testing._waiting as waiting
import support.pipelines as pipelines
import support.plans as plans
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.ledger.opening import open_store
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._application.upgrade.commands import (
    apply_command,
    plan_command,
)
from pyspark_kafka_upgrade._application.verify import VerifyRange, verify_pipeline
from pyspark_kafka_upgrade._core.settings import (
    Settings,
)
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.verification import PairState, Status, VerifyReport
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT

pytestmark = pytest.mark.integration

MINUTE_MS = pipelines.MINUTE_MS
WINDOW_MS = 10 * MINUTE_MS
GRID = oracle.Grid(WINDOW_MS)
ARTICLES = ["a1", "a2"]
# One event a minute from 10:00 to 10:59; generation 1 reads the first 40, to 10:39, and
# stops with W = 10:34: the 10:30-10:40 windows are open.
TIMES = [pipelines.BASE_MS + i * MINUTE_MS for i in range(60)]
READ_BY_GENERATION_1 = 40
RATE_LIMIT = "kafka.max_offsets_per_trigger=10"
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'


def run(settings: Settings, spark: SparkSession) -> None:
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)


def run_generation_1(
    spark: SparkSession,
    log: oracle.EventLog,
    topic: str,
    tmp_path: Path,
    connector: str | None = None,
) -> Settings:
    """Version 1 over the first 40 events of a new 2-partition topic, in batches of 10."""
    testing.create_topic(log.bootstrap, topic, 2)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[:READ_BY_GENERATION_1], 2))
    settings = pipelines.pipeline_settings(
        tmp_path, log.bootstrap, topic, RATE_LIMIT, *connector_setting(connector)
    )
    run(settings, spark)
    return settings


def connector_setting(connector: str | None) -> list[str]:
    return [] if connector is None else [f"kafka.connector={connector}"]


# Each connector reads added partitions its own way (Spark's discovers them per batch; the
# pykafka source asks the broker in latestOffset). The session has the built-in connector's
# jars only when the suite runs with it (KAFKA_CONNECTOR=builtin, as CI's library run does).
CONNECTORS = [
    "python",
    pytest.param(
        "builtin",
        marks=pytest.mark.skipif(
            testing.connector_under_test(PROJECT) != "builtin",
            reason="the session has the built-in connector's jars only with "
            "KAFKA_CONNECTOR=builtin",
        ),
    ),
]


def verify_all(settings: Settings, spark: SparkSession) -> VerifyReport:
    """`verify` over every window of the test's hour, from the ledger, checkpoints and Kafka."""
    return verify_pipeline(
        settings, VerifyRange(from_ms=pipelines.BASE_MS - WINDOW_MS), spark=spark
    )


def states_of(report: VerifyReport, status: Status) -> dict[tuple[int, str], frozenset[str]]:
    """Per (window start, article) of ``status``: the states of the events behind it."""
    return {
        (finding.window_start_ms, str(finding.keys["article_id"])): frozenset(
            event.state for event in finding.events
        )
        for finding in report.findings
        if finding.status is status
    }


def late_pairs(events: list[oracle.Event], watermark_ms: int) -> set[tuple[int, str]]:
    """(window start, article) of each (event, window) pair whose window ended by W."""
    return {
        (start, event.key)
        for event in events
        for start in GRID.starts(event.time_ms)
        if start + WINDOW_MS <= watermark_ms
    }


def written_long_ago(partitions: list[int]) -> list[testing.Record]:
    """Events of 10:05, 10:15 and 10:25, in windows generation 1 wrote: one per partition."""
    times = [pipelines.BASE_MS + minute * MINUTE_MS for minute in (5, 15, 25)]
    return [
        testing.Record(
            partition,
            b"old",
            pipelines.event_value("old", time_ms),
            time_ms,
        )
        for partition in partitions
        for time_ms in times
    ]


def compare_generations(
    spark: SparkSession,
    settings: Settings,
    log: oracle.EventLog,
    *,
    counted: Callable[[oracle.Event, int], bool] = lambda event, window_end: True,
) -> oracle.Comparison:
    """Both generations' committed rows against the oracle, through generation 2's W."""
    layouts = [GenerationLayout(settings.pipeline.root, generation) for generation in (1, 2)]
    expected = oracle.expected_counts(
        log.events,
        GRID,
        written_through_ms=oracle.final_watermark_ms(layouts[1].checkpoint),
        counted=counted,
    )
    written = {
        f"generation {layout.generation}": oracle.written_rows(spark, layout.output)
        for layout in layouts
    }
    return oracle.Comparison(expected, written, log.events, GRID)


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    """Grow ``topic`` to ``total`` partitions and wait until every one has a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, total)])[topic].result(timeout=30)

    def grown() -> bool:
        try:
            found = admin.list_topics(topic=topic, timeout=5).topics[topic]
        except KafkaException:
            return False
        return sorted(found.partitions) == list(range(total)) and all(
            partition.error is None and partition.leader >= 0
            for partition in found.partitions.values()
        )

    waiting.wait_until(
        grown, timeout=30, interval=0.05, message=f"{topic} did not show {total} partitions"
    )


@pytest.mark.parametrize("connector", CONNECTORS)
def test_partitions_added_before_the_upgrade_are_read_from_earliest_and_verify_agrees(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path, connector: str
) -> None:
    log = oracle.EventLog(kafka_backend.bootstrap_servers)
    topic = testing.unique_topic("added-partitions")
    settings = run_generation_1(spark, log, topic, tmp_path, connector)
    watermark_ms = oracle.final_watermark_ms(GenerationLayout(settings.pipeline.root, 1).checkpoint)

    # The topic grows from 2 to 4 partitions while no generation runs. The new ones get
    # events of windows generation 1 wrote before they existed, then the rest of the stream
    # goes to all four, the new ones from offset 0.
    add_partitions(log.bootstrap, topic, 4)
    long_ago = log.produce(topic, written_long_ago([2, 3]))
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[READ_BY_GENERATION_1:], 4))
    version_2 = pipelines.pipeline_settings(
        tmp_path, log.bootstrap, topic, VERSION_2, *connector_setting(connector)
    )

    plan = plans.planned(
        plan_command(version_2, as_json=True, accept_data_loss=False, spark=lambda: spark)
    )
    assert plans.added(plan) == [f"{topic}:2", f"{topic}:3"]
    assert plans.restart_offsets(plan, topic)["2"] == -2  # earliest
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    run(version_2, spark)

    # The oracle: every event once, but those of windows written before their partition
    # existed, which the replay filter drops as late (the honest guarantee).
    compare_generations(
        spark,
        settings,
        log,
        counted=lambda event, window_end: event.partition < 2 or window_end > watermark_ms,
    ).check()
    report = verify_all(version_2, spark)
    assert report.ok, report.findings
    late = late_pairs(long_ago, watermark_ms)
    assert report.late_events == len(long_ago) == 6
    assert states_of(report, Status.LATE) == dict.fromkeys(
        late, frozenset({PairState.OUTSIDE.value})
    )
    assert {f.owner for f in report.findings} == {1}
    assert report.count(Status.LOST) == 0


@pytest.mark.parametrize("connector", CONNECTORS)
def test_partitions_added_while_generation_1_runs_are_its_own_and_verify_agrees(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path, connector: str
) -> None:
    log = oracle.EventLog(kafka_backend.bootstrap_servers)
    topic = testing.unique_topic("grown-while-running")
    testing.create_topic(log.bootstrap, topic, 2)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[:20], 2))
    settings = pipelines.pipeline_settings(
        tmp_path, log.bootstrap, topic, RATE_LIMIT, *connector_setting(connector)
    )
    run(settings, spark)
    # Generation 1 has stopped once with W = 10:14; the topic grows and generation 1 runs
    # again: it reads the new partition from offset 0, as any of its batches would.
    add_partitions(log.bootstrap, topic, 3)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[20:READ_BY_GENERATION_1], 3))
    run(settings, spark)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[READ_BY_GENERATION_1:], 3))
    version_2 = pipelines.pipeline_settings(
        tmp_path, log.bootstrap, topic, VERSION_2, *connector_setting(connector)
    )
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    run(version_2, spark)

    compare_generations(spark, settings, log).check()
    report = verify_all(version_2, spark)
    assert report.ok, report.findings
    assert report.findings == () and report.late_events == 0


@pytest.mark.parametrize("connector", CONNECTORS)
def test_partitions_added_while_generation_2_runs_and_verify_agrees(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path, connector: str
) -> None:
    log = oracle.EventLog(kafka_backend.bootstrap_servers)
    topic = testing.unique_topic("grown-after-upgrade")
    settings = run_generation_1(spark, log, topic, tmp_path, connector)
    watermark_ms = oracle.final_watermark_ms(GenerationLayout(settings.pipeline.root, 1).checkpoint)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[READ_BY_GENERATION_1:50], 2))
    version_2 = pipelines.pipeline_settings(
        tmp_path, log.bootstrap, topic, VERSION_2, *connector_setting(connector)
    )
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    run(version_2, spark)
    generation_2 = GenerationLayout(settings.pipeline.root, 2).checkpoint
    late_for_2 = oracle.final_watermark_ms(generation_2)

    # Generation 2 has read to 10:49 (its W 10:44). The topic grows; the new partition gets
    # events of windows generation 1 wrote (nobody's: outside its partitions), one of
    # 10:37 whose windows generation 2 wrote before the partition existed (late for it, as
    # in any run), then the rest of the stream.
    add_partitions(log.bootstrap, topic, 3)
    long_ago = log.produce(topic, written_long_ago([2]))
    late = log.produce(
        topic,
        [
            testing.Record(
                2,
                b"late",
                pipelines.event_value("late", pipelines.BASE_MS + 37 * MINUTE_MS),
                pipelines.BASE_MS,
            )
        ],
    )
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[50:], 3))
    run(version_2, spark)

    compare_generations(
        spark,
        settings,
        log,
        counted=lambda event, window_end: event not in long_ago + late,
    ).check()
    report = verify_all(version_2, spark)
    assert report.ok, report.findings
    assert states_of(report, Status.LATE) == {
        **dict.fromkeys(late_pairs(long_ago, watermark_ms), frozenset({PairState.OUTSIDE.value})),
        **dict.fromkeys(late_pairs(late, late_for_2), frozenset({PairState.LATE.value})),
    }
    assert report.count(Status.LOST) == 0


def test_an_added_partition_the_new_generation_skipped_is_lost_and_verify_says_so(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    """The negative control: the plan, rewritten in the ledger after apply, starts the added
    partition at its end (as a naive `latest` would). Its records of windows after W are
    never read; `verify` must call those windows lost, naming the skipped records."""
    log = oracle.EventLog(kafka_backend.bootstrap_servers)
    topic = testing.unique_topic("added-skipped")
    settings = run_generation_1(spark, log, topic, tmp_path)
    add_partitions(log.bootstrap, topic, 3)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[READ_BY_GENERATION_1:], 3))
    version_2 = pipelines.pipeline_settings(tmp_path, log.bootstrap, topic, VERSION_2)
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    skipped = [event for event in log.events if event.partition == 2]
    restart_added_partition_at(version_2, (topic, 2), len(skipped))
    run(version_2, spark)

    report = verify_all(version_2, spark)
    assert not report.ok
    # Lost: the windows generation 2 owns (end after W) and has written (end at or before its
    # own last watermark) that hold a skipped record. Those ending by W are generation 1's,
    # which never had the partition; those after generation 2's watermark are still open.
    layouts = [GenerationLayout(settings.pipeline.root, generation) for generation in (1, 2)]
    w, written_through = (oracle.final_watermark_ms(layout.checkpoint) for layout in layouts)
    expected = {
        (start, event.key)
        for event in skipped
        for start in GRID.starts(event.time_ms)
        if w < start + WINDOW_MS <= written_through
    }
    lost = states_of(report, Status.LOST)
    assert expected and set(lost) == expected
    assert all(PairState.SKIPPED.value in states for states in lost.values())
    assert {
        (e.topic, e.partition)
        for f in report.findings
        for e in f.events
        if e.state == PairState.SKIPPED.value
    } == {(topic, 2)}


def restart_added_partition_at(settings: Settings, key: tuple[str, int], offset: int) -> None:
    """Rewrites the applied plan in the ledger: ``key`` restarts at ``offset``."""
    with open_store(settings.ledger) as store:
        record = store.generation(settings.pipeline.name, 2)
        assert record is not None and record.plan is not None
        plan = UpgradePlan.from_json(record.plan)
        moved = tuple(
            dataclasses.replace(p, restart_offset=offset, quarantine_offset=offset)
            if (p.topic, p.partition) == key
            else p
            for p in plan.partitions
        )
        assert moved != plan.partitions
        store.record_generation(
            dataclasses.replace(record, plan=dataclasses.replace(plan, partitions=moved).to_json())
        )


def test_a_topic_added_to_the_subscription_is_read_from_its_earliest_offsets(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    log = oracle.EventLog(kafka_backend.bootstrap_servers)
    old_topic = testing.unique_topic("subscribed")
    settings = run_generation_1(spark, log, old_topic, tmp_path)
    generation_1 = GenerationLayout(settings.pipeline.root, 1)
    watermark_ms = oracle.final_watermark_ms(generation_1.checkpoint)

    # The new topic holds events from 10:25 to 10:59, one every two minutes. Those of
    # 10:25-10:29 fall in the 10:20-10:30 windows generation 1 has written already.
    new_topic = testing.unique_topic("added-topic")
    testing.create_topic(log.bootstrap, new_topic, 2)
    later = [pipelines.BASE_MS + minute * MINUTE_MS for minute in range(25, 60, 2)]
    log.produce(new_topic, pipelines.page_views(ARTICLES, later, 2))
    log.produce(old_topic, pipelines.page_views(ARTICLES, TIMES, 2)[READ_BY_GENERATION_1:])
    two_topics = pipelines.pipeline_settings(
        tmp_path, log.bootstrap, old_topic, f"kafka.topics={old_topic},{new_topic}"
    )
    apply_command(two_topics, accept_data_loss=False, spark=lambda: spark)
    run(two_topics, spark)

    # A window is written once, by one generation: the new topic's events of windows that
    # ended at or before W count nowhere (the honest guarantee); every other event, of
    # either topic, counts exactly once.
    compare_generations(
        spark,
        settings,
        log,
        counted=lambda event, window_end: event.topic == old_topic or window_end > watermark_ms,
    ).check()
