"""An upgrade onto a new checkpoint loses nothing and writes nothing twice.

`upgrade apply` killed after each of its steps: test_proof_upgrade_kills.py, with kill -9."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import pyspark_kafka_upgrade.testing._waiting as waiting
import support.background_run as background
import support.pipelines as pipelines
import support.plans as plans
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.ledger.opening import (
    open_store,
)
from pyspark_kafka_upgrade._adapters.sink.reading import (
    read_output,
)
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._application.upgrade.commands import (
    apply_command,
    plan_command,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    GenerationStatus,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
    table_location,
)

pytestmark = pytest.mark.integration

BASE_MS = pipelines.BASE_MS
MINUTE_MS = pipelines.MINUTE_MS
WINDOW_MS = 10 * MINUTE_MS
DELAY_MS = 5 * MINUTE_MS
ARTICLES = ["a1", "a2"]
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'


def run(settings: Settings, spark: SparkSession) -> None:
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)


def output(spark: SparkSession, settings: Settings, generation: int) -> DataFrame:
    if settings.sink.format == "delta":
        # The one table, read by Delta itself (its log names the committed files), not
        # through the library's sink: the generation's rows, by the column it marked them.
        table = spark.read.format("delta").load(table_location(settings.pipeline.root))
        return table.where(F.col("generation") == generation)
    # Each generation through its own _spark_metadata: committed files only.
    return spark.read.parquet(GenerationLayout(settings.pipeline.root, generation).output)


def counts(frame: DataFrame) -> Counter[tuple[int, str]]:
    found: Counter[tuple[int, str]] = Counter()
    for row in frame.collect():
        key = (round(row.window_start.timestamp() * 1000), row.article_id)
        assert key not in found, f"window {key} written twice within one generation"
        found[key] = row.views
    return found


def uninterrupted(times: list[int], watermark_ms: int) -> Counter[tuple[int, str]]:
    expected: Counter[tuple[int, str]] = Counter()
    for i, event_ms in enumerate(times):
        start = event_ms - event_ms % WINDOW_MS
        if start + WINDOW_MS <= watermark_ms:
            expected[(start, ARTICLES[i % 2])] += 1
    return expected


@pytest.fixture
def generation_1(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> tuple[Settings, list[int]]:
    """Version 1 ran over the first 40 of 60 events; the 10:30-10:40 windows are open."""
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("upgrade")
    testing.create_topic(bootstrap, topic, 2)
    times = [BASE_MS + i * MINUTE_MS for i in range(60)]
    testing.produce(bootstrap, topic, pipelines.page_views(ARTICLES, times[:40], partitions=2))
    settings = pipelines.pipeline_settings(
        tmp_path, bootstrap, topic, "kafka.max_offsets_per_trigger=10"
    )
    run(settings, spark)
    return settings, times


def test_adding_an_aggregate_upgrades_without_loss_or_duplicates(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    generation_1: tuple[Settings, list[int]],
    tmp_path: Path,
) -> None:
    settings, times = generation_1
    version_2 = pipelines.pipeline_settings(
        tmp_path,
        kafka_backend.bootstrap_servers,
        settings.kafka.topics[0],
        "kafka.max_offsets_per_trigger=10",
        VERSION_2,
    )

    plan = plans.planned(
        plan_command(version_2, as_json=True, accept_data_loss=False, spark=lambda: spark)
    )
    assert plan.advice.verdict == "needs_new_checkpoint"
    assert [c.path for c in plan.advice.changes] == ["aggregates", "output_schema"]
    w_1 = times[39] - DELAY_MS
    assert plan.watermark_ms == w_1
    # The open window 10:30-10:40 holds events 30..39: offsets 15..19 of each partition.
    topic = settings.kafka.topics[0]
    assert plans.restart_offsets(plan, topic) == {"0": 15, "1": 15}
    assert plan.records_to_replay == 10

    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    testing.produce(
        kafka_backend.bootstrap_servers,
        topic,
        [r for r in pipelines.page_views(ARTICLES, times, partitions=2)][40:],
    )
    run(version_2, spark)

    old, new = counts(output(spark, settings, 1)), counts(output(spark, settings, 2))
    assert not set(old) & set(new), "a window was written by both generations"
    assert all(start + WINDOW_MS > w_1 for start, _ in new)
    with open_store(settings.ledger, spark=lambda: spark) as store:
        generations = store.generations(settings.pipeline.name)
        last = store.last_batch(settings.pipeline.name, 2)
    assert [(g.generation, g.status) for g in generations] == [
        (1, GenerationStatus.RETIRED),
        (2, GenerationStatus.RUNNING),
    ]
    assert generations[1].plan is not None
    assert generations[1].plan["consumed_at_ms"] is not None
    assert last is not None
    assert old + new == uninterrupted(times, last.batch_watermark_ms)
    assert last.batch_watermark_ms == times[-1] - DELAY_MS
    users = output(spark, settings, 2).select("users").collect()
    assert all(row.users == 1 for row in users)  # every event of the demo has user u1

    # The reader unions both generations, version 1's rows without the new column.
    union = read_output(spark, settings.pipeline.root, file_format=settings.sink.format).collect()
    assert Counter(row.generation for row in union) == Counter({1: len(old), 2: len(new)})
    assert all(row.users is None for row in union if row.generation == 1)


def test_the_rate_limit_is_off_for_the_replay_batch_only(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    generation_1: tuple[Settings, list[int]],
    tmp_path: Path,
) -> None:
    settings, times = generation_1
    bootstrap = kafka_backend.bootstrap_servers
    topic = settings.kafka.topics[0]
    version_2 = pipelines.pipeline_settings(
        tmp_path, bootstrap, topic, "kafka.max_offsets_per_trigger=10", VERSION_2
    )
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    records = pipelines.page_views(ARTICLES, [*times, *(t + 60 * MINUTE_MS for t in times)], 2)
    testing.produce(bootstrap, topic, records[40:60])

    def batches() -> list[int]:
        with open_store(settings.ledger, spark=lambda: spark) as store:
            return [batch.input_rows for batch in store.batches(settings.pipeline.name, 2)]

    with background.running(version_2, spark) as job:
        waiting.wait_until(
            lambda: job.ended or batches(), timeout=120, message="no batch of generation 2"
        )
        # Arrives while generation 2 runs, after its replay: read under the rate limit.
        testing.produce(bootstrap, topic, records[60:90])
        waiting.wait_until(
            lambda: job.ended or sum(batches()) == 30 + 30,
            timeout=120,
            message="generation 2 never read the 30 records produced after its replay",
        )
    assert job.summary().stopped_by == "stop request"
    replay, *after = [rows for rows in batches() if rows]
    # The replay (offsets 15-19 of each partition) and all 20 records that were waiting, in
    # one batch though the limit is 10; then at most 10 a batch.
    assert replay == 10 + 20
    assert sum(after) == 30
    assert max(after) <= 10


def test_a_second_upgrade_writes_nothing_the_first_generation_wrote(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("upgrade-twice")
    testing.create_topic(bootstrap, topic, 1)
    # Minutes 0-39 in order, then a straggler from minute 28: generation 1 counts it in
    # 10:20-10:30, and the replay for the open window 10:30-10:40 reads it again.
    times = [BASE_MS + i * MINUTE_MS for i in range(40)] + [BASE_MS + 28 * MINUTE_MS]
    times += [BASE_MS + i * MINUTE_MS for i in range(40, 60)]
    events = pipelines.page_views(ARTICLES, times, partitions=1)
    testing.produce(bootstrap, topic, events[:41])
    version_1 = pipelines.pipeline_settings(tmp_path, bootstrap, topic)
    run(version_1, spark)
    w_1 = times[39] - DELAY_MS

    # Version 2 waits longer for late events. With nothing new to read, its watermark
    # stops at 10:39 - 15 min = 10:24, below W of generation 1.
    slower = "window.watermark_delay=15 minutes"
    version_2 = pipelines.pipeline_settings(tmp_path, bootstrap, topic, VERSION_2, slower)
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    run(version_2, spark)
    with open_store(version_1.ledger, spark=lambda: spark) as store:
        last_2 = store.last_batch(version_1.pipeline.name, 2)
    assert last_2 is not None and last_2.batch_watermark_ms == times[39] - 15 * MINUTE_MS

    # Generation 3 must still drop every window ending at or before W of generation 1.
    version_3 = pipelines.pipeline_settings(
        tmp_path,
        bootstrap,
        topic,
        slower,
        'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)", '
        '"first_user": "min(user_id)"}',
    )
    plan = plans.planned(
        plan_command(version_3, as_json=True, accept_data_loss=False, spark=lambda: spark)
    )
    assert plan.watermark_ms == w_1
    assert plan.replay_filter.describe() == f"window.end > {w_1}"
    apply_command(version_3, accept_data_loss=False, spark=lambda: spark)
    testing.produce(bootstrap, topic, events[41:])
    run(version_3, spark)

    written = [counts(output(spark, version_1, generation)) for generation in (1, 2, 3)]
    for one, other in ((0, 1), (0, 2), (1, 2)):
        assert not set(written[one]) & set(written[other]), (one + 1, other + 1)
    with open_store(version_1.ledger, spark=lambda: spark) as store:
        last = store.last_batch(version_1.pipeline.name, 3)
    assert last is not None and last.batch_watermark_ms == times[-1] - 15 * MINUTE_MS
    expected: Counter[tuple[int, str]] = Counter()
    for i, event_ms in enumerate(times):
        start = event_ms - event_ms % WINDOW_MS
        if start + WINDOW_MS <= last.batch_watermark_ms:
            expected[(start, ARTICLES[i % 2])] += 1
    assert written[0] + written[1] + written[2] == expected


def test_a_new_window_counts_each_event_once_across_generations(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    generation_1: tuple[Settings, list[int]],
    tmp_path: Path,
) -> None:
    settings, times = generation_1
    topic = settings.kafka.topics[0]
    five_minutes = pipelines.pipeline_settings(
        tmp_path, kafka_backend.bootstrap_servers, topic, "window.duration=5 minutes"
    )
    plan = plans.planned(
        plan_command(five_minutes, as_json=True, accept_data_loss=False, spark=lambda: spark)
    )
    # The old 10-minute grid no longer lines up: the boundary is the old T_min, in event time.
    t_min = BASE_MS - BASE_MS % WINDOW_MS + 3 * WINDOW_MS
    assert plan.window_changed is True
    assert plan.replay_filter.event_time_from_ms == t_min
    assert plan.replay_filter.window_end_after_ms is None

    apply_command(five_minutes, accept_data_loss=False, spark=lambda: spark)
    testing.produce(
        kafka_backend.bootstrap_servers,
        topic,
        pipelines.page_views(ARTICLES, times, partitions=2)[40:],
    )
    run(five_minutes, spark)

    old = output(spark, settings, 1).collect()
    new = output(spark, settings, 2).collect()
    assert all(row.window_end.timestamp() * 1000 <= t_min for row in old)
    assert all(row.window_start.timestamp() * 1000 >= t_min for row in new)
    with open_store(settings.ledger, spark=lambda: spark) as store:
        last = store.last_batch(settings.pipeline.name, 2)
    assert last is not None
    # Every event before the new watermark's last written window is counted exactly once.
    written_until = last.batch_watermark_ms - last.batch_watermark_ms % (5 * MINUTE_MS)
    assert sum(row.views for row in old) + sum(row.views for row in new) == sum(
        1 for t in times if t < written_until
    )


def test_a_new_topic_starts_at_its_earliest_offsets_and_the_old_ones_where_planned(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    generation_1: tuple[Settings, list[int]],
    tmp_path: Path,
) -> None:
    settings, times = generation_1
    bootstrap = kafka_backend.bootstrap_servers
    old_topic = settings.kafka.topics[0]
    new_topic = testing.unique_topic("upgrade-new")
    testing.create_topic(bootstrap, new_topic, 2)
    testing.produce(
        bootstrap, new_topic, pipelines.page_views(ARTICLES, times[40:50], partitions=2)
    )
    two_topics = pipelines.pipeline_settings(
        tmp_path, bootstrap, old_topic, f"kafka.topics={old_topic},{new_topic}"
    )

    plan = plans.planned(
        plan_command(two_topics, as_json=True, accept_data_loss=False, spark=lambda: spark)
    )
    # Both connectors want every subscribed partition named in startingOffsets.
    assert json.loads(plan.starting_offsets) == {
        old_topic: {"0": 15, "1": 15},
        new_topic: {"0": -2, "1": -2},
    }
    assert plans.added(plan) == [f"{new_topic}:0", f"{new_topic}:1"]

    apply_command(two_topics, accept_data_loss=False, spark=lambda: spark)
    run(two_topics, spark)

    with open_store(settings.ledger, spark=lambda: spark) as store:
        batches = store.batches(settings.pipeline.name, 2)
    assert json.loads(batches[-1].end_offsets) == {
        old_topic: {"0": 20, "1": 20},
        new_topic: {"0": 5, "1": 5},
    }
    assert sum(batch.input_rows for batch in batches) == 10 + 10  # the replay and the new topic
