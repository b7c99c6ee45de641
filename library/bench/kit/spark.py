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
from pyspark_kafka_upgrade import steps
from pyspark_kafka_upgrade._adapters.kafka.connector import read_kafka_stream
from pyspark_kafka_upgrade._adapters.sink.writer import start_file_sink
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
    """One Trigger.AvailableNow run of the windowed job into the append file sink."""

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
    """Run the job on a fresh checkpoint until it has read what the topic holds."""
    checkpoint = workdir / name / "checkpoint"
    output = workdir / name / "out"
    frame = windowed_job(spark, settings, checkpoint, observed=observed)
    started = time.perf_counter()
    query = start_file_sink(
        frame,
        query_name=name,
        path=str(output),
        checkpoint=str(checkpoint),
        file_format=settings.sink.format,
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
    workdir: Path, bootstrap: str, connectors: tuple[Connector, ...]
) -> SparkSession:
    """The run's one session; built for the built-in connector when it is chosen, since its
    jars load only with the first SparkContext (the pykafka source needs none)."""
    connector: Connector = "builtin" if "builtin" in connectors else "python"
    settings = pipelines.pipeline_settings(
        workdir / "shared-session", bootstrap, "bench", f"kafka.connector={connector}"
    )
    return start_spark(settings, "bench", shuffle_partitions=settings.pipeline.state_partitions)
