"""Naive restarts lose data without a word; the project's upgrade, on the same events, loses none.

A suite that only ever passes proves little. These controls run the restarts teams reach
for first and show, with the same oracle the rest of the suite uses, exactly what they lose:

- version 2 on a new checkpoint, reading on from the last batch's end offsets (as the
  Databricks knowledge-base article on restarting from stored offsets does), never sees
  again the events of the windows generation 1 still held open in its state;
- a new checkpoint writing into the old output directory has its first batches skipped by
  the sink, because that directory's ``_spark_metadata`` already holds their batch ids.

Each control then runs the project's own upgrade on the same events and finds nothing lost
and nothing written twice.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

import pyspark_kafka_upgrade.testing._oracle as oracle
import support.pipelines as pipelines
import support.pykafka_streams as pykafka_streams
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._application.upgrade.commands import (
    apply_command,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT

pytestmark = pytest.mark.integration

MINUTE_MS = pipelines.MINUTE_MS
WINDOW_MS = 10 * MINUTE_MS
GRID = oracle.Grid(WINDOW_MS)
ARTICLES = ["a1", "a2"]
# One event a minute from 10:00 to 10:59; generation 1 reads the first 40, to 10:39.
TIMES = [pipelines.BASE_MS + i * MINUTE_MS for i in range(60)]
READ_BY_GENERATION_1 = 40
RATE_LIMIT = "kafka.max_offsets_per_trigger=10"
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
QUERY_TIMEOUT_S = 120


@dataclass(frozen=True)
class Stopped:
    """Generation 1 of a pipeline, stopped with windows still open, as its checkpoint says."""

    settings: Settings
    log: oracle.EventLog
    records: list[testing.Record]
    checkpoint: str
    output: str
    watermark_ms: int  # W: every window ending at or before it is written
    end_offsets: dict[str, dict[int, int]]  # of the last committed batch

    @property
    def topic(self) -> str:
        return self.settings.kafka.topics[0]

    def end_offsets_json(self) -> str:
        return json.dumps(
            {
                topic: {str(partition): offset for partition, offset in parts.items()}
                for topic, parts in self.end_offsets.items()
            }
        )


def run(settings: Settings, spark: SparkSession) -> None:
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)


@pytest.fixture
def stopped(spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path) -> Stopped:
    """Version 1 ran over the first 40 of 60 in-order events, in batches of 10, and stopped."""
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("naive-restart")
    testing.create_topic(bootstrap, topic, 2)
    log = oracle.EventLog(bootstrap)
    records = pipelines.page_views(ARTICLES, TIMES, partitions=2)
    log.produce(topic, records[:READ_BY_GENERATION_1])
    settings = pipelines.pipeline_settings(tmp_path / "project", bootstrap, topic, RATE_LIMIT)
    run(settings, spark)
    layout = GenerationLayout(settings.pipeline.root, 1)
    # Read from Spark's own files, not through the package's checkpoint reader or planner.
    last = oracle.committed_batches(layout.checkpoint)[-1]
    return Stopped(
        settings=settings,
        log=log,
        records=records,
        checkpoint=layout.checkpoint,
        output=layout.output,
        watermark_ms=oracle.final_watermark_ms(layout.checkpoint),
        end_offsets=oracle.end_offsets(layout.checkpoint, last),
    )


def upgrade_to_version_2(
    spark: SparkSession, stopped: Stopped, tmp_path: Path
) -> oracle.Comparison:
    """The project's way: plan and apply generation 2, run it, compare both generations."""
    version_2 = pipelines.pipeline_settings(
        tmp_path / "project",
        stopped.settings.kafka.bootstrap_servers,
        stopped.topic,
        VERSION_2,
    )
    apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
    run(version_2, spark)
    generation_2 = GenerationLayout(version_2.pipeline.root, 2)
    expected = oracle.expected_counts(
        stopped.log.events,
        GRID,
        written_through_ms=oracle.final_watermark_ms(generation_2.checkpoint),
    )
    written = {
        "generation 1": oracle.written_rows(spark, stopped.output),
        "generation 2": oracle.written_rows(spark, generation_2.output),
    }
    return oracle.Comparison(expected, written, stopped.log.events, GRID)


def test_a_naive_restart_from_the_last_end_offsets_loses_the_windows_open_at_the_stop(
    spark: SparkSession, stopped: Stopped, tmp_path: Path
) -> None:
    # Version 2 restarts as the knowledge-base article has it: a new checkpoint and a new
    # output, reading on from where the last committed batch ended, with no replay. A
    # pipeline of its own gives it exactly that: a fresh generation 1 at those offsets.
    naive = pipelines.pipeline_settings(
        tmp_path / "naive",
        stopped.settings.kafka.bootstrap_servers,
        stopped.topic,
        f"pipeline.name={stopped.topic}-naive",
        VERSION_2,
        f"kafka.starting_offsets={stopped.end_offsets_json()}",
    )
    stopped.log.produce(stopped.topic, stopped.records[READ_BY_GENERATION_1:])
    run(naive, spark)
    naive_layout = GenerationLayout(naive.pipeline.root, 1)
    written_through = oracle.final_watermark_ms(naive_layout.checkpoint)
    events = stopped.log.events
    naive_restart = oracle.Comparison(
        oracle.expected_counts(events, GRID, written_through_ms=written_through),
        {
            "generation 1": oracle.written_rows(spark, stopped.output),
            "naive version 2": oracle.written_rows(spark, naive_layout.output),
        },
        events,
        GRID,
    )

    # What it must lose: the events generation 1 had read into windows still open at its
    # stop. They were in generation 1's state, which the new checkpoint does not have, and
    # the naive restart begins after them.
    open_at_stop: Counter[oracle.WindowKey] = Counter()
    for event in events:
        if event.offset < stopped.end_offsets[event.topic][event.partition]:
            for start in GRID.starts(event.time_ms):
                if stopped.watermark_ms < start + WINDOW_MS <= written_through:
                    open_at_stop[(start, event.key)] += 1
    assert open_at_stop, "generation 1 stopped with no window open: this control proves nothing"
    assert naive_restart.shortfall == open_at_stop, naive_restart.report()
    # It loses them without a trace: nothing else differs, nothing fails.
    assert not naive_restart.surplus, naive_restart.report()
    assert not naive_restart.written_twice, naive_restart.report()

    # The project's upgrade, on the same events and generation 1, loses nothing.
    upgrade_to_version_2(spark, stopped, tmp_path).check()


def start_windowed_count(
    spark: SparkSession,
    stopped: Stopped,
    *,
    starting_offsets: str,
    output: str,
    checkpoint: Path,
    max_offsets_per_trigger: int,
) -> StreamingQuery:
    """The pipeline's kind of query, built with Spark alone: Kafka, a windowed count with a
    watermark, appended as parquet; read with the connector under test."""
    if testing.connector_under_test(PROJECT) == "builtin":
        reader = spark.readStream.format("kafka")
    else:
        pykafka_streams.register(spark)
        reader = spark.readStream.format(pykafka_streams.FORMAT).option(
            "initialOffsetsLocation", str(pykafka_streams.initial_offsets_file(checkpoint))
        )
    raw = (
        reader.option("kafka.bootstrap.servers", stopped.settings.kafka.bootstrap_servers)
        .option("subscribe", stopped.topic)
        .option("startingOffsets", starting_offsets)
        .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
        .load()
    )
    schema = "article_id STRING, event_time TIMESTAMP"
    events = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("event"))
    counts = (
        events.select("event.*")
        .withWatermark("event_time", "5 minutes")
        .groupBy(F.window("event_time", "10 minutes"), "article_id")
        .agg(F.count(F.lit(1)).alias("views"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "article_id",
            "views",
        )
    )
    return (
        counts.writeStream.format("parquet")
        .outputMode("append")
        .option("path", output)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


@pytest.mark.skipif(
    pipelines.SINK_FORMAT == "delta",
    reason="a file sink's _spark_metadata is what skips these batches: on a Delta table, "
    "test_delta_sink.py proves the table's own transactions",
)
def test_a_new_checkpoint_on_the_old_output_directory_writes_nothing(
    spark: SparkSession, stopped: Stopped, tmp_path: Path
) -> None:
    old_batches = oracle.sink_batches(stopped.output)
    before = sorted(oracle.written_rows(spark, stopped.output))
    assert old_batches == oracle.committed_batches(stopped.checkpoint)
    stopped.log.produce(stopped.topic, stopped.records[READ_BY_GENERATION_1:])

    # Version 2 on a new checkpoint, reading on from the end offsets, but writing into
    # generation 1's directory. Its batch ids start again at 0, and the file sink skips
    # every id its _spark_metadata already holds ("Skipping already committed batch"): the
    # batch is never computed, yet the checkpoint commits it. Two records a batch, so that
    # it needs more batches than generation 1 ran.
    checkpoint = tmp_path / "new-checkpoint"
    query = start_windowed_count(
        spark,
        stopped,
        starting_offsets=stopped.end_offsets_json(),
        output=stopped.output,
        checkpoint=checkpoint,
        max_offsets_per_trigger=2,
    )
    # Measured on Spark 4.2: the first batch past those ids is the first one computed, and
    # the aggregation then finds no state for the batches before it: the query fails.
    try:
        with pytest.raises(StreamingQueryException, match="CANNOT_LOAD_STATE_STORE"):
            query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()

    # The silence before that failure: every batch id generation 1 had used ran again and
    # committed, each past records of its own, and not one row reached the output. Its
    # watermark never left 0: the sink skipped the batches before any event was computed.
    assert oracle.committed_batches(checkpoint) == old_batches
    assert oracle.planned_batches(checkpoint) == [*old_batches, old_batches[-1] + 1]
    read_to = [stopped.end_offsets] + [oracle.end_offsets(checkpoint, n) for n in old_batches]
    assert all(earlier != later for earlier, later in itertools.pairwise(read_to)), read_to
    assert {oracle.batch_watermark_ms(checkpoint, n) for n in old_batches} == {0}
    swallowed = [
        event
        for event in stopped.log.events
        if stopped.end_offsets[event.topic][event.partition]
        <= event.offset
        < read_to[-1][event.topic][event.partition]
    ]
    assert sorted(oracle.written_rows(spark, stopped.output)) == before, (
        "the skipped batches wrote to generation 1's output; they had read "
        + ", ".join(event.describe() for event in swallowed)
    )
    assert oracle.sink_batches(stopped.output) == old_batches

    # The generation layout avoids it: generation 2 has a directory of its own, so its
    # batch ids collide with nothing, and the records the failed query swallowed are there.
    upgrade = upgrade_to_version_2(spark, stopped, tmp_path)
    assert upgrade.written["generation 2"], "generation 2 wrote no row"
    upgrade.check()
