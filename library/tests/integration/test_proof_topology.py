"""Partitions and topics added between versions are read from their earliest offsets, exactly.

A partition or topic generation 1 never read has no offset in its checkpoint. The upgrade
starts it at its earliest offset, so each of its records is counted in the new generation,
once, like the replayed records of the old partitions. The oracle checks every window and
key across both generations.
"""

from __future__ import annotations

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

import pyspark_kafka_upgrade.testing.kafka_backends as kafka
import pyspark_kafka_upgrade.testing.oracle as oracle
import pyspark_kafka_upgrade.testing.waiting as waiting
import support.pipelines as pipelines
import support.plans as plans
from pyspark_kafka_upgrade.run.command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade.settings import (
    Settings,
)
from pyspark_kafka_upgrade.upgrade.commands import (
    apply_command,
    plan_command,
)
from pyspark_kafka_upgrade.values.layout import (
    GenerationLayout,
)

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
    spark: SparkSession, log: oracle.EventLog, topic: str, tmp_path: Path
) -> Settings:
    """Version 1 over the first 40 events of a new 2-partition topic, in batches of 10."""
    kafka.create_topic(log.bootstrap, topic, 2)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[:READ_BY_GENERATION_1], 2))
    settings = pipelines.pipeline_settings(tmp_path, log.bootstrap, topic, RATE_LIMIT)
    run(settings, spark)
    return settings


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


def test_partitions_added_to_the_topic_are_read_from_their_earliest_offsets(
    spark: SparkSession, kafka_backend: kafka.KafkaBackend, tmp_path: Path
) -> None:
    log = oracle.EventLog(kafka_backend.bootstrap_servers)
    topic = kafka.unique_topic("added-partitions")
    settings = run_generation_1(spark, log, topic, tmp_path)

    # The topic grows while no generation runs; the rest of the stream goes to all three
    # partitions, the new one from offset 0.
    add_partitions(log.bootstrap, topic, 3)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[READ_BY_GENERATION_1:], 3))
    version_2 = pipelines.pipeline_settings(tmp_path, log.bootstrap, topic, VERSION_2)

    plan = plans.planned(
        plan_command(version_2, as_json=True, accept_data_loss=False, spark=lambda: spark)
    )
    assert plans.added(plan) == [f"{topic}:2"]
    assert plans.restart_offsets(plan, topic)["2"] == -2  # earliest
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    run(version_2, spark)

    compare_generations(spark, settings, log).check()


def test_a_topic_added_to_the_subscription_is_read_from_its_earliest_offsets(
    spark: SparkSession, kafka_backend: kafka.KafkaBackend, tmp_path: Path
) -> None:
    log = oracle.EventLog(kafka_backend.bootstrap_servers)
    old_topic = kafka.unique_topic("subscribed")
    settings = run_generation_1(spark, log, old_topic, tmp_path)
    generation_1 = GenerationLayout(settings.pipeline.root, 1)
    watermark_ms = oracle.final_watermark_ms(generation_1.checkpoint)

    # The new topic holds events from 10:25 to 10:59, one every two minutes. Those of
    # 10:25-10:29 fall in the 10:20-10:30 windows generation 1 has written already.
    new_topic = kafka.unique_topic("added-topic")
    kafka.create_topic(log.bootstrap, new_topic, 2)
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
