"""Naive restarts lose data without a word; the project's upgrade, on the same events, loses none.

A suite that only ever passes proves little. These controls run the restarts teams reach
for first and show, with the same oracle the rest of the suite uses, exactly what they lose:

- version 2 on a new checkpoint, reading on from the last batch's end offsets (as the
  Databricks knowledge-base article on restarting from stored offsets does), never sees
  again the events of the windows generation 1 still held open in its state;
- a new checkpoint writing into the old output directory has its first batches skipped by
  the sink, because that directory's ``_spark_metadata`` already holds their batch ids.

On a Delta table (``SINK_FORMAT=delta``) the naive restarts are a team's on Delta's own
streaming sink (``writeStream.format("delta")``), both versions appending to one table: its
transactions are keyed by the query id, which a new checkpoint renews, so they deduplicate
nothing across the restart. Reading on from the end offsets loses the open windows; reading
from earliest writes every written window again. Each runs as generation 2 of a pipeline the
ledger knows, its plan rewritten to the naive restart, so that `verify` can judge the table
as well as the oracle.

Each control then runs the project's own upgrade on the same events and finds nothing lost
and nothing written twice.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

import pyspark_kafka_upgrade._adapters.sink.delta_writer as delta_writer
import pyspark_kafka_upgrade.testing._oracle as oracle
import support.pipelines as pipelines
import support.proofs as proofs
import support.pykafka_streams as pykafka_streams
from pyspark_kafka_upgrade import Project, testing
from pyspark_kafka_upgrade._adapters.ledger.opening import (
    open_store,
)
from pyspark_kafka_upgrade._adapters.sink.writer import (
    triggered,
)
from pyspark_kafka_upgrade._application.run.queries import (
    AGGREGATES_QUERY,
)
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._application.upgrade.commands import (
    apply_command,
)
from pyspark_kafka_upgrade._application.verify import (
    VerifyRange,
    verify_pipeline,
)
from pyspark_kafka_upgrade._core.reconciliation.verify_words import (
    render_report,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.plan import (
    PartitionRestart,
    UpgradePlan,
)
from pyspark_kafka_upgrade._domain.records.sink import (
    Trigger,
)
from pyspark_kafka_upgrade._domain.records.verification import (
    PairState,
    Status,
    VerifyReport,
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


@dataclass(frozen=True)
class NaiveRestart:
    """A naive version 2 that followed a generation 1 stopped at W, and what it wrote."""

    comparison: oracle.Comparison  # both versions' rows against the oracle
    watermark_ms: int  # W of the generation 1 it followed
    end_offsets: dict[str, dict[int, int]]  # of that generation 1's last committed batch
    written_through_ms: int  # the naive version 2's last watermark
    verified: VerifyReport | None  # `verify`, where the ledger knows both versions


def both_versions(
    spark: SparkSession,
    events: Sequence[oracle.Event],
    written_through_ms: int,
    first: str,
    naive: str,
) -> oracle.Comparison:
    """Generation 1's rows at ``first`` and the naive version 2's at ``naive`` against the
    oracle's counts of ``events``, for every window the naive version 2 could have written."""
    return oracle.Comparison(
        oracle.expected_counts(events, GRID, written_through_ms=written_through_ms),
        {
            "generation 1": oracle.written_rows(spark, first),
            "naive version 2": oracle.written_rows(spark, naive),
        },
        events,
        GRID,
    )


def test_a_naive_restart_from_the_last_end_offsets_loses_the_windows_open_at_the_stop(
    spark: SparkSession, stopped: Stopped, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pipelines.SINK_FORMAT == "delta":
        naive = naive_restart_into_one_table(
            spark, stopped, tmp_path, monkeypatch, restart_at=old_end_offset
        )
    else:
        naive = naive_restart_into_a_new_output(spark, stopped, tmp_path)
    naive_restart = naive.comparison

    # What it must lose: the events generation 1 had read into windows still open at its
    # stop. They were in generation 1's state, which the new checkpoint does not have, and
    # the naive restart begins after them.
    open_at_stop: Counter[oracle.WindowKey] = Counter()
    for event in naive_restart.events:
        if event.offset < naive.end_offsets[event.topic][event.partition]:
            for start in GRID.starts(event.time_ms):
                if naive.watermark_ms < start + WINDOW_MS <= naive.written_through_ms:
                    open_at_stop[(start, event.key)] += 1
    assert open_at_stop, "generation 1 stopped with no window open: this control proves nothing"
    assert naive_restart.shortfall == open_at_stop, naive_restart.report()
    # It loses them without a trace: nothing else differs, nothing fails.
    assert not naive_restart.surplus, naive_restart.report()
    assert not naive_restart.written_twice, naive_restart.report()
    if naive.verified is not None:
        # `verify` names the same windows lost, each with events the new checkpoint never read.
        assert findings(naive.verified, Status.LOST) == set(open_at_stop), render_report(
            naive.verified
        )
        assert naive.verified.count(Status.WRITTEN_TWICE) == 0, render_report(naive.verified)
        assert naive.verified.count(Status.DIFFERENT) == 0, render_report(naive.verified)
        for finding in naive.verified.findings:
            assert PairState.SKIPPED in {event.state for event in finding.events}, finding

    # The project's upgrade, on the same events and generation 1, loses nothing.
    upgrade_to_version_2(spark, stopped, tmp_path).check()


def naive_restart_into_a_new_output(
    spark: SparkSession, stopped: Stopped, tmp_path: Path
) -> NaiveRestart:
    """Version 2 restarts as the knowledge-base article has it: a new checkpoint and a new
    output, reading on from where the last committed batch ended, with no replay. A
    pipeline of its own gives it exactly that: a fresh generation 1 at those offsets."""
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
    return NaiveRestart(
        comparison=both_versions(
            spark, stopped.log.events, written_through, stopped.output, naive_layout.output
        ),
        watermark_ms=stopped.watermark_ms,
        end_offsets=stopped.end_offsets,
        written_through_ms=written_through,
        verified=None,
    )


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
    reason="a file sink's _spark_metadata is what skips these batches, and a Delta table has "
    "none: what a new checkpoint on the same table does is the restart from earliest below",
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


@pytest.mark.skipif(
    pipelines.SINK_FORMAT != "delta",
    reason="only a table is shared by every generation: with files a new checkpoint writes a "
    "directory of its own (into the old one, the test above shows what _spark_metadata does)",
)
def test_a_restart_from_earliest_on_delta_streaming_sink_writes_every_window_again(
    spark: SparkSession, stopped: Stopped, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other naive way: a new checkpoint reading the topic again from earliest, with no
    # replay filter. Delta's own sink would skip a batch id it committed before, but only
    # for the same query id: this one is new, so it appends every window once more.
    idle = proofs.with_idle_replay_filter(PROJECT, tmp_path)
    naive = naive_restart_into_one_table(
        spark, stopped, tmp_path, monkeypatch, restart_at=EARLIEST, version_2_project=idle
    )
    again = naive.comparison

    first = Counter({(start, key): views for start, key, views in again.written["generation 1"]})
    assert first, "generation 1 wrote no window: this control proves nothing"
    # Every window generation 1 wrote is in the table twice, each count in full; nothing is
    # lost and every window after W is written once.
    assert set(again.written_twice) == set(first), again.report()
    assert again.surplus == first, again.report()
    assert not again.shortfall, again.report()
    verified = naive.verified
    assert verified is not None
    assert findings(verified, Status.WRITTEN_TWICE) == set(first), render_report(verified)
    assert verified.count(Status.LOST) == 0, render_report(verified)
    assert verified.count(Status.DIFFERENT) == 0, render_report(verified)

    upgrade_to_version_2(spark, stopped, tmp_path).check()


# -- Delta's own streaming sink ----------------------------------------------------------------

_LIBRARY_WRITER = delta_writer.start_delta_sink
EARLIEST = -2  # Kafka's startingOffsets code for a partition's earliest offset


def delta_streaming_sink(
    frame: DataFrame,
    *,
    query_name: str,
    table: str,
    name: str,
    checkpoint: str,
    generation: int,
    trigger: Trigger,
) -> StreamingQuery:
    """The windows appended by Delta's own streaming sink instead of the library's writer:
    append mode, each batch one commit under Delta's transaction (query id, batch id). Its
    rows carry their version in the table's ``generation`` column, so the oracle and
    `verify` can tell the versions apart. The quarantine keeps the library's writer."""
    if query_name != AGGREGATES_QUERY:
        return _LIBRARY_WRITER(
            frame,
            query_name=query_name,
            table=table,
            name=name,
            checkpoint=checkpoint,
            generation=generation,
            trigger=trigger,
        )
    writer = (
        frame.withColumn("generation", F.lit(generation).cast("int"))
        .writeStream.queryName(query_name)
        .format("delta")
        .outputMode("append")
        .partitionBy("generation")
        .option("checkpointLocation", checkpoint)
        .option("mergeSchema", "true")  # version 2's added metric
    )
    return triggered(writer, trigger).start(table)


def old_end_offset(partition: PartitionRestart) -> int | None:
    return partition.old_end_offset


def naive_restart_into_one_table(
    spark: SparkSession,
    stopped: Stopped,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    restart_at: Callable[[PartitionRestart], int | None] | int,
    version_2_project: Project = PROJECT,
) -> NaiveRestart:
    """A pipeline of its own on Delta's own streaming sink, over ``stopped``'s topic: its
    generation 1 reads the same first events and stops; the rest arrive; version 2 starts
    on a new checkpoint at ``restart_at`` (each partition's offset, or one for all) and
    appends to the same table. It runs as the ledger's generation 2, applied from a plan
    then rewritten to that restart, so `verify` judges it by the split a correct upgrade
    makes (windows ending after W are generation 2's)."""
    bootstrap = stopped.settings.kafka.bootstrap_servers

    def settings(project: Project, *more: str) -> Settings:
        overrides = pipelines.pipeline_overrides(
            tmp_path / "naive",
            bootstrap,
            stopped.topic,
            f"pipeline.name={stopped.topic}-naive",
            RATE_LIMIT,
            *more,
        )
        return load_settings(project, env={}, overrides=overrides).settings

    version_1, version_2 = settings(PROJECT), settings(version_2_project, VERSION_2)
    root = version_1.pipeline.root
    first, second = GenerationLayout(root, 1), GenerationLayout(root, 2)
    with monkeypatch.context() as patched:
        patched.setattr(delta_writer, "start_delta_sink", delta_streaming_sink)
        run(version_1, spark)
        stopped.log.produce(stopped.topic, stopped.records[READ_BY_GENERATION_1:])
        apply_command(version_2, accept_data_loss=False, spark=lambda: spark)
        rewrite_restart(version_2, restart_at)
        run(version_2, spark)

    # Delta's own transactions wrote the table: one application id per query id, which
    # each checkpoint's metadata holds, and none of the library's.
    table = DeltaTable(str(Path(root) / "output" / "table"))
    query_ids = []
    for generation, layout in ((1, first), (2, second)):
        query_id = json.loads((Path(layout.checkpoint) / "metadata").read_text())["id"]
        query_ids.append(query_id)
        last = oracle.committed_batches(layout.checkpoint)[-1]
        assert table.transaction_version(query_id) == last, (generation, query_id)
        assert table.transaction_version(f"pyspark-kafka-upgrade/generation-{generation}") is None
    assert query_ids[0] != query_ids[1], "the new checkpoint kept the old query id"

    written_through = oracle.final_watermark_ms(second.checkpoint)
    last_of_first = oracle.committed_batches(first.checkpoint)[-1]
    return NaiveRestart(
        comparison=both_versions(
            spark, stopped.log.events, written_through, first.output, second.output
        ),
        watermark_ms=oracle.final_watermark_ms(first.checkpoint),
        end_offsets=oracle.end_offsets(first.checkpoint, last_of_first),
        written_through_ms=written_through,
        verified=verify_pipeline(
            version_2, VerifyRange(from_ms=pipelines.BASE_MS - WINDOW_MS), spark=spark
        ),
    )


def rewrite_restart(
    settings: Settings, restart_at: Callable[[PartitionRestart], int | None] | int
) -> None:
    """Generation 2's plan in the ledger, rewritten so that it starts where ``restart_at``
    says, its window split (W, the replay filter's) left as planned."""
    with open_store(settings.ledger) as store:
        record = store.generation(settings.pipeline.name, 2)
        assert record is not None and record.plan is not None
        plan = UpgradePlan.from_json(record.plan)
        partitions = []
        for partition in plan.partitions:
            offset = restart_at if isinstance(restart_at, int) else restart_at(partition)
            partitions.append(dataclasses.replace(partition, restart_offset=offset))
        naive = dataclasses.replace(plan, partitions=tuple(partitions))
        store.record_generation(dataclasses.replace(record, plan=naive.to_json()))


def findings(report: VerifyReport, status: Status) -> set[oracle.WindowKey]:
    """The windows and keys `verify` gave ``status``."""
    assert not report.more_findings, render_report(report)
    return {
        (finding.window_start_ms, str(finding.keys["article_id"]))
        for finding in report.findings
        if finding.status is status
    }
