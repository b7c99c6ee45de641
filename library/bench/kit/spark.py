"""The Spark session and the pipeline's windowed job, run to the end of a topic."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

import support.pipelines as pipelines
from bench.kit.context import Connector
from bench.kit.sinks import Job
from pyspark_kafka_upgrade import steps
from pyspark_kafka_upgrade._adapters.kafka.connector import read_kafka_stream
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.spark import parsing
from pyspark_kafka_upgrade._adapters.spark.session import build_spark_session
from pyspark_kafka_upgrade._application.run.bookkeeping import GenerationStart
from pyspark_kafka_upgrade._application.run.queries import recipe_of
from pyspark_kafka_upgrade._core.query import columns
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.records.sink import Trigger
from pyspark_kafka_upgrade._example import query


class JobError(RuntimeError):
    """The windowed job did not finish, or failed."""


def with_connector(settings: Settings, connector: Connector) -> Settings:
    return replace(settings, kafka=replace(settings.kafka, connector=connector))


def start_spark(settings: Settings, app_name: str, *, shuffle_partitions: int = 2) -> SparkSession:
    """Two local cores; built for ``settings.kafka.connector``, whose jars load only now."""
    return build_spark_session(
        settings,
        app_name=app_name,
        master="local[2]",
        extra_conf={
            "spark.ui.enabled": "false",
            # Stage progress bars would garble the benchmarks' progress lines.
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": str(shuffle_partitions),
        },
    )


def windowed_job(
    spark: SparkSession, settings: Settings, checkpoint: Path, *, observed: bool
) -> DataFrame:
    """The pipeline's aggregates query: parse, (observe,) valid events, watermark, windows."""
    raw = read_kafka_stream(
        spark, settings.kafka, initial_offsets_location=str(checkpoint / "sources" / "0" / "0")
    )
    recipe = recipe_of(settings, GenerationStart())
    if observed:
        return query.windowed_aggregates(raw, recipe)
    # The reference query without its observation: the listener's cost is what is measured.
    events = parsing.valid_events(steps.parse_events(raw, recipe))
    return steps.aggregate(steps.window_events(events, recipe), recipe)


@dataclass(frozen=True)
class JobRun:
    """One Trigger.AvailableNow run of the windowed job into the sink of ``sink.format``."""

    # Generation 1's output: the file sink's directory, or the Delta table.
    output: Path
    # From start() until the query had stopped.
    wall_s: float
    progress: list[Mapping[str, Any]]

    @property
    def input_rows(self) -> int:
        return sum(int(p["numInputRows"]) for p in self.progress)

    def batch_seconds(self, *, with_input_only: bool) -> list[float]:
        """Spark's triggerExecution time of each batch."""
        return [
            int(p["durationMs"]["triggerExecution"]) / 1000
            for p in self.progress
            if p["numInputRows"] or not with_input_only
        ]

    def observed(self, metric: str) -> int:
        """A batch metric of ``observe_batch_metrics``, summed over the run's batches."""
        rows = [(p.get("observedMetrics") or {}).get(columns.BATCH_METRICS) for p in self.progress]
        # A batch without input observes nothing, and a sum over no rows is null.
        return sum(int(row[metric] or 0) for row in rows if row is not None)


def run_windowed_job(
    spark: SparkSession,
    settings: Settings,
    workdir: Path,
    name: str,
    *,
    observed: bool,
    timeout_s: int,
) -> JobRun:
    """Run the job on a fresh checkpoint until it has read what the topic holds, into the
    sink the pipeline opens for ``sink.format`` (generation 1 of a root of its own)."""
    checkpoint = workdir / name / "checkpoint"
    sink = open_sink(settings.sink, str(workdir / name))
    output = Path(sink.location(1))
    frame = windowed_job(spark, settings, checkpoint, observed=observed)
    started = time.perf_counter()
    query = sink.start(
        frame,
        generation=1,
        query_name=name,
        checkpoint=str(checkpoint),
        trigger=Trigger(available_now=True),
    )
    if not query.awaitTermination(timeout_s):
        query.stop()
        raise JobError(f"query {name} did not finish within {timeout_s} s")
    wall = time.perf_counter() - started
    error = query.exception()
    if error is not None:
        raise JobError(f"query {name} failed: {error}")
    return JobRun(output, wall, list(query.recentProgress))


def shared_session(
    workdir: Path, bootstrap: str, connectors: tuple[Connector, ...], *, delta: bool = False
) -> SparkSession:
    """The run's one session; built for the built-in connector when it is chosen, and with
    Delta's jars and extension when a chosen benchmark writes Delta, since both load only
    with the first SparkContext (the pykafka source needs none)."""
    connector: Connector = "builtin" if "builtin" in connectors else "python"
    settings = pipelines.pipeline_settings(
        workdir / "shared-session",
        bootstrap,
        "bench",
        f"kafka.connector={connector}",
        *(["sink.format=delta"] if delta else []),
    )
    return start_spark(settings, "bench", shuffle_partitions=settings.pipeline.state_partitions)


def jobs_since(spark: SparkSession, since_ms: float) -> list[Job]:
    """The session's Spark jobs submitted since ``since_ms`` (epoch), from its status store:
    what its UI would show, kept with the UI off too. Private to Spark, reached through
    Py4J: [] when this Spark has none to give, and the profile goes without it."""
    try:
        context: Any = spark.sparkContext._jsc
        listed = context.sc().statusStore().jobsList(None).iterator()
        jobs = []
        while listed.hasNext():
            job = listed.next()
            submitted, completed = job.submissionTime(), job.completionTime()
            if submitted.isEmpty() or completed.isEmpty():
                continue
            start, end = submitted.get().getTime(), completed.get().getTime()
            if start < since_ms:
                continue
            description = job.description()
            text = "" if description.isEmpty() else str(description.get())
            jobs.append(Job(float(start), float(end - start), text.startswith("Delta:")))
    except Exception:  # Py4J's errors, or a Spark whose store differs: no profile of jobs
        return []
    return jobs
