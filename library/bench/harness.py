"""What the benchmarks share: filling a topic, the Spark session, the windowed job, timings.

The scripts put the project directory and ``tests/`` on ``sys.path`` before importing this,
so that the broker helpers come from the tests rather than a copy.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pyspark.sql import DataFrame, SparkSession

import pyspark_kafka_upgrade.testing.kafka_backends as brokers
import support.pipelines as pipelines
from pyspark_kafka_upgrade.example import query
from pyspark_kafka_upgrade.kafka.connector import (
    read_kafka_stream,
)
from pyspark_kafka_upgrade.query import columns
from pyspark_kafka_upgrade.run.bookkeeping import GenerationStart
from pyspark_kafka_upgrade.run.queries import recipe_of
from pyspark_kafka_upgrade.settings import (
    Settings,
)
from pyspark_kafka_upgrade.sink.writer import (
    Trigger,
    start_file_sink,
)
from pyspark_kafka_upgrade.spark import parsing, steps
from pyspark_kafka_upgrade.spark.session import (
    build_spark_session,
)

# Records per produce() call: bounds the producer's memory, whatever --records says.
_CHUNK = 50_000
_PRODUCE_TIMEOUT_S = 120.0
# Event times of consecutive page views: 300,000 events span about 50 ten-minute windows.
EVENT_STEP_MS = 100


@dataclass(frozen=True)
class Measurement:
    reader: str
    kind: str
    records: int
    # Wall time per run; for Spark that includes starting and stopping the query.
    seconds: list[float]

    @property
    def best_rate(self) -> float:
        return self.records / min(self.seconds)

    @property
    def median_rate(self) -> float:
        return self.records / statistics.median(self.seconds)


def time_it(action: Callable[[], int], expected: int) -> float:
    started = time.perf_counter()
    seen = action()
    elapsed = time.perf_counter() - started
    if seen != expected:
        raise SystemExit(f"read {seen} records, expected {expected}")
    return elapsed


def fill_topic(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    make: Callable[[range], Iterable[brokers.Record]],
) -> None:
    """Create ``topic`` and produce ``records`` records, ``make`` building each chunk's."""
    brokers.create_topic(bootstrap, topic, partitions)
    for start in range(0, records, _CHUNK):
        brokers.produce(
            bootstrap,
            topic,
            make(range(start, min(start + _CHUNK, records))),
            timeout=_PRODUCE_TIMEOUT_S,
        )


def page_views(indices: range, partitions: int, articles: Sequence[str]) -> list[brokers.Record]:
    """Valid page views number ``indices``: the windowed job aggregates every one of them."""
    first = pipelines.BASE_MS + indices.start * EVENT_STEP_MS
    return pipelines.page_views(
        articles, range(first, first + len(indices) * EVENT_STEP_MS, EVENT_STEP_MS), partitions
    )


def with_connector(settings: Settings, connector: Literal["python", "builtin"]) -> Settings:
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
    # When start() was called (epoch), and how long until the query had stopped.
    started_at: float
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

    def duration_ms(self) -> dict[str, int]:
        """Each phase of Spark's durationMs, summed over the run's batches."""
        totals: dict[str, int] = {}
        for progress in self.progress:
            for phase, ms in progress["durationMs"].items():
                totals[phase] = totals.get(phase, 0) + int(ms)
        return totals

    def wall_split(self) -> dict[str, float]:
        """Where the wall time went: seconds before the first batch, in batches, and after.

        "after" also holds the gaps between batches, which AvailableNow runs back to back.
        """
        first = datetime.fromisoformat(self.progress[0]["timestamp"]).timestamp()
        before = first - self.started_at
        batches = sum(self.batch_seconds(with_input_only=False))
        return {"before": before, "batches": batches, "after": self.wall_s - before - batches}

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
    started_at = time.time()
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
        raise SystemExit(f"query {name} did not finish within {timeout_s} s")
    wall = time.perf_counter() - started
    error = query.exception()
    if error is not None:
        raise SystemExit(f"query {name} failed: {error}")
    return JobRun(output, started_at, wall, list(query.recentProgress))


def fill_topic_reporting(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    make: Callable[[range], Iterable[brokers.Record]],
    progress: Callable[[int], None],
) -> None:
    """:func:`fill_topic`, calling ``progress`` with the records produced after each chunk."""
    brokers.create_topic(bootstrap, topic, partitions)
    for start in range(0, records, _CHUNK):
        end = min(start + _CHUNK, records)
        brokers.produce(bootstrap, topic, make(range(start, end)), timeout=_PRODUCE_TIMEOUT_S)
        progress(end)
