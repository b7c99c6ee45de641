"""Use case: run the pipeline's current generation until it is told to stop.

Two streaming queries share one generation and one run lock:
  - ``aggregates``: Kafka -> parse -> observe(batch metrics) -> valid events -> watermark ->
    windows -> append to the generation's output. The ledger records its batches.
  - ``quarantine``: Kafka -> parse -> malformed records -> append to the generation's
    quarantine, so that no malformed record is ever dropped silently.
Each has its own checkpoint, so each restarts exactly where it committed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from .. import transformations
from ..errors import PipelineError
from ..layout import GenerationLayout
from ..ledger.listener import BatchMetricNames, LedgerListener
from ..ledger.opening import open_store
from ..ledger.records import GenerationRecord, GenerationStatus
from ..ledger.store import OffsetStore
from ..run_lock import RunLock
from ..settings import LoadedSettings, Settings
from ..sink import Trigger, start_file_sink
from ..source.connector import read_kafka_stream
from ..spark_session import build_spark_session
from .generations import current_generation
from .progress import ConsoleProgress
from .signature import pipeline_signature

log = logging.getLogger(__name__)

AGGREGATES_QUERY = "aggregates"
QUARANTINE_QUERY = "quarantine"
METRICS = BatchMetricNames(
    observation=transformations.BATCH_METRICS,
    input_rows=transformations.INPUT_ROWS,
    malformed_rows=transformations.MALFORMED_ROWS,
    min_event_time_us=transformations.MIN_EVENT_TIME_US,
    max_event_time_us=transformations.MAX_EVENT_TIME_US,
)
# How long a stop waits for the batch in flight to finish before it interrupts it, and for
# the listener bus to deliver the last progress events to the ledger.
_BATCH_FINISH_TIMEOUT_S = 300.0
_LEDGER_CATCH_UP_TIMEOUT_S = 30.0
_POLL_S = 1


class QueryFailedError(PipelineError):
    """A streaming query stopped with an error; the message is Spark's, shortened."""


@dataclass
class RunSummary:
    pipeline: str
    generation: int
    batches: dict[str, int] = field(default_factory=dict)  # query name -> last batch id
    stopped_by: str = "end of input"
    # query name -> its recent progress events (spark.sql.streaming.numRecentProgressUpdates)
    progress: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunRequest:
    settings: Settings
    available_now: bool = False
    master: str | None = None
    extra_conf: Mapping[str, str] = field(default_factory=dict)
    # Set by a signal handler (or a test): stop after the batches in flight.
    stop: threading.Event = field(default_factory=threading.Event)
    echo: Callable[[str], None] = print


def run_pipeline(request: RunRequest, spark: SparkSession | None = None) -> RunSummary:
    settings = request.settings
    spark = spark or build_spark_session(
        settings,
        app_name=settings.pipeline.name,
        master=request.master,
        extra_conf=request.extra_conf,
    )
    session = spark
    with open_store(settings.ledger, spark=lambda: session) as store:
        generation = current_generation(store, settings.pipeline.name)
        layout = GenerationLayout(settings.pipeline.root, generation)
        with RunLock(layout.run_lock, purpose="run") as run_lock:
            return _run_generation(request, spark, store, layout, run_lock)


def _run_generation(
    request: RunRequest,
    spark: SparkSession,
    store: OffsetStore,
    layout: GenerationLayout,
    run_lock: RunLock,
) -> RunSummary:
    settings = request.settings
    pipeline = settings.pipeline.name
    aggregates = _aggregates_frame(spark, settings, layout)
    quarantine = _quarantine_frame(spark, settings, layout)
    _record_generation(store, settings, layout, aggregates, spark.version)

    ledger = LedgerListener(
        store,
        pipeline=pipeline,
        generation=layout.generation,
        query_name=AGGREGATES_QUERY,
        metrics=METRICS,
    )
    console = ConsoleProgress(
        {AGGREGATES_QUERY, QUARANTINE_QUERY},
        malformed=lambda progress: _observed(progress, METRICS.malformed_rows),
    )
    spark.streams.addListener(ledger)
    spark.streams.addListener(console)
    trigger = Trigger(interval=settings.sink.trigger_interval, available_now=request.available_now)
    summary = RunSummary(pipeline=pipeline, generation=layout.generation)
    request.echo(
        f"{pipeline}: running generation {layout.generation} "
        f"({'until caught up' if request.available_now else 'until stopped'})"
    )
    request.echo(f"  output      {layout.output}")
    request.echo(f"  quarantine  {layout.quarantine}")
    request.echo(f"  checkpoint  {layout.checkpoint}")
    request.echo(f"  ledger      {store.describe()}")
    queries: list[StreamingQuery] = []
    try:
        queries.append(
            start_file_sink(
                aggregates,
                query_name=AGGREGATES_QUERY,
                path=layout.output,
                checkpoint=layout.checkpoint,
                file_format=settings.sink.format,
                trigger=trigger,
            )
        )
        queries.append(
            start_file_sink(
                quarantine,
                query_name=QUARANTINE_QUERY,
                path=layout.quarantine,
                checkpoint=layout.quarantine_checkpoint,
                file_format=settings.sink.format,
                trigger=trigger,
            )
        )
        summary.stopped_by = _wait(queries, request.stop, run_lock)
    finally:
        _stop_gracefully(queries)
        last = _last_batch_id(queries[0]) if queries else None
        if last is not None and not ledger.wait_for_batch(last, _LEDGER_CATCH_UP_TIMEOUT_S):
            log.warning(
                "the ledger has not seen batch %d within %.0f s; the upgrade planner will "
                "fall back to the checkpoint for it",
                last,
                _LEDGER_CATCH_UP_TIMEOUT_S,
            )
        spark.streams.removeListener(ledger)
        spark.streams.removeListener(console)
    for query in queries:
        summary.progress[query.name] = list(query.recentProgress)
        batch = _last_batch_id(query)
        if batch is not None:
            summary.batches[query.name] = batch
    _raise_if_failed(queries)
    return summary


def _aggregates_frame(
    spark: SparkSession, settings: Settings, layout: GenerationLayout
) -> DataFrame:
    raw = read_kafka_stream(spark, settings.kafka, initial_offsets_location=layout.initial_offsets)
    parsed = transformations.observe_batch_metrics(_parse(raw, settings))
    return transformations.windowed_aggregates(
        transformations.valid_events(parsed),
        window=settings.window.spec,
        keys=settings.aggregation.keys,
        metrics=settings.aggregation.metric_specs,
    )


def _quarantine_frame(
    spark: SparkSession, settings: Settings, layout: GenerationLayout
) -> DataFrame:
    raw = read_kafka_stream(
        spark, settings.kafka, initial_offsets_location=layout.quarantine_initial_offsets
    )
    return transformations.quarantine_records(_parse(raw, settings))


def _parse(raw: DataFrame, settings: Settings) -> DataFrame:
    return transformations.parse_events(
        raw,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )


def _record_generation(
    store: OffsetStore,
    settings: Settings,
    layout: GenerationLayout,
    aggregates: DataFrame,
    spark_version: str,
) -> None:
    signature = pipeline_signature(
        settings,
        layout,
        aggregate_schema=[(f.name, f.dataType.simpleString()) for f in aggregates.schema.fields],
        spark_version=spark_version,
    )
    now_ms = time.time_ns() // 1_000_000
    existing = store.generation(settings.pipeline.name, layout.generation)
    store.record_generation(
        GenerationRecord(
            pipeline=settings.pipeline.name,
            generation=layout.generation,
            status=GenerationStatus.RUNNING,
            signature=signature,
            plan=None if existing is None else existing.plan,
            created_at_ms=now_ms if existing is None else existing.created_at_ms,
            updated_at_ms=now_ms,
        )
    )


def _wait(queries: list[StreamingQuery], stop: threading.Event, run_lock: RunLock) -> str:
    while True:
        if stop.is_set():
            return "stop request"
        if run_lock.lost:
            log.error("the run lock was taken by another process; stopping")
            return "lost run lock"
        if any(query.exception() is not None for query in queries):
            return "query failure"
        if not any(query.isActive for query in queries):
            return "end of input"
        queries[0].awaitTermination(_POLL_S)


def _stop_gracefully(queries: list[StreamingQuery]) -> None:
    """Let each query finish the batch in flight, then stop it before the next one starts."""
    for query in queries:
        deadline = time.monotonic() + _BATCH_FINISH_TIMEOUT_S
        while (
            query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        if query.isActive:
            query.stop()


def _last_batch_id(query: StreamingQuery) -> int | None:
    progress = query.lastProgress
    return None if progress is None else int(progress["batchId"])


def _observed(progress: Mapping[str, Any], name: str) -> int | None:
    observed = (progress.get("observedMetrics") or {}).get(METRICS.observation)
    if not observed or observed.get(name) is None:
        return None
    return int(observed[name])


def _raise_if_failed(queries: list[StreamingQuery]) -> None:
    for query in queries:
        error = query.exception()
        if error is not None:
            raise QueryFailedError(f"query {query.name} failed: {_first_line(error)}")


def _first_line(error: StreamingQueryException) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return lines[0][:500] if lines else type(error).__name__


def run(
    loaded: LoadedSettings, *, available_now: bool, master: str | None, stop: threading.Event
) -> str:
    """Run with the CLI's options; the one-line summary of how it ended."""
    summary = run_pipeline(
        RunRequest(settings=loaded.settings, available_now=available_now, master=master, stop=stop)
    )
    return describe_summary(summary)


def describe_summary(summary: RunSummary) -> str:
    batches = ", ".join(f"{name} to batch {batch}" for name, batch in summary.batches.items())
    return (
        f"{summary.pipeline}: generation {summary.generation} stopped ({summary.stopped_by}); "
        f"committed {batches or 'no batch'}"
    )
