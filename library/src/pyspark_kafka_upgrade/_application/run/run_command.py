"""Use case: run the pipeline's current generation until it is told to stop.

Composed of four parts, each in its own module:
  - the generation, claimed here under its run lock, its record read once;
  - ``bookkeeping``: what the ledger needs before, during and after the queries;
  - ``queries``: what runs, as data (phases of query specs built from the settings);
  - ``supervisor``: the loop that starts the phases, waits, and stops them gracefully.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._adapters.checkpoint.reader import last_committed_batch
from pyspark_kafka_upgrade._adapters.kafka.connector import check_kafka_access
from pyspark_kafka_upgrade._adapters.ledger.opening import open_store
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.spark.cluster_storage import check_storage_reaches
from pyspark_kafka_upgrade._adapters.spark.listener import LedgerListener
from pyspark_kafka_upgrade._adapters.spark.session import build_spark_session
from pyspark_kafka_upgrade._adapters.spark.spark_errors import cause
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._adapters.storage.run_lock import RunLock
from pyspark_kafka_upgrade._application.generation.signature import derive_signature
from pyspark_kafka_upgrade._application.run.bookkeeping import (
    GenerationStart,
    PlanConsumption,
    UpgradeIncompleteError,
    generation_start,
    mark_unrecorded_batches,
    record_generation,
    refuse_uncarried,
    refuse_without_history,
    wait_for_ledger,
)
from pyspark_kafka_upgrade._application.run.handoff import (
    HANDED_OVER,
    HANDOFF_REQUESTED,
    HANDOFF_WITHDRAWN,
    HandedOver,
    HandoffRequested,
    Successor,
    WaitStopped,
    complete_handoff,
    generation_to_run,
    successor_of,
    take_handoff,
    wait_for_handoff,
)
from pyspark_kafka_upgrade._application.run.progress import ConsoleProgress
from pyspark_kafka_upgrade._application.run.queries import (
    AGGREGATES_QUERY,
    METRICS,
    QUARANTINE_QUERY,
    Phase,
    run_phases,
)
from pyspark_kafka_upgrade._application.run.supervisor import (
    QueryFailedError,
    Supervision,
    supervise,
)
from pyspark_kafka_upgrade._core.settings import LoadedSettings, Settings
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.catalog import STORES
from pyspark_kafka_upgrade._domain.values.clock import iso_utc
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout

log = logging.getLogger(__name__)


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


@dataclass(frozen=True, slots=True)
class _Claim:
    """The generation this run holds: its directories, its record and its run lock."""

    layout: GenerationLayout
    record: GenerationRecord | None
    run_lock: RunLock


def run_pipeline(request: RunRequest, spark: SparkSession | None = None) -> RunSummary:
    settings = request.settings
    if spark is not None:
        check_storage_reaches(settings, _master_of(spark))
        check_kafka_access(settings.kafka)
        return _run_on(request, spark)
    if request.master is not None:
        check_storage_reaches(settings, request.master)  # before Spark reaches the cluster
    # Before Spark: a login Kafka refuses would otherwise retry inside the query for minutes.
    check_kafka_access(settings.kafka)
    # Before Spark too: a version the checkpoint cannot carry is refused in a second, where
    # a session (on a cluster, an application) would take ten or more to start.
    _refuse_before_spark(settings)
    # The session this run starts, it also stops: stopping drains Spark's listener bus
    # while this process can still answer it, so no progress event is cut off.
    session = build_spark_session(
        settings,
        app_name=settings.pipeline.name,
        master=request.master,
        extra_conf={
            # Stage progress bars would garble the one line per batch.
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": str(settings.pipeline.state_partitions),
            **request.extra_conf,
        },
    )
    try:
        if request.master is None:  # spark-submit chose it: the session knows which
            check_storage_reaches(settings, _master_of(session))
        return _run_on(request, session)
    finally:
        session.stop()


def _refuse_before_spark(settings: Settings) -> None:
    """Refuse what ``record_generation`` would, when the ledger is read without Spark (the
    filesystem store writes through Spark's Hadoop classes: that one refuses later)."""
    if STORES[settings.ledger.store].needs_spark:
        return
    pipeline = settings.pipeline.name
    with open_store(settings.ledger) as store:
        generation = generation_to_run(store, settings)
        record = store.generation(pipeline, generation)
        if record is None or not record.signature:
            return
        # Only the session knows the Spark it runs: judged as unchanged here, and later.
        recorded = record.signature.get("spark_version")
        layout = GenerationLayout(absolute_uri(settings.pipeline.root), generation)
        signature = derive_signature(
            settings, layout, spark_version=recorded if isinstance(recorded, str) else None
        )
        refuse_uncarried(record, signature, generation)


def _master_of(spark: SparkSession) -> str:
    return spark.conf.get("spark.master", "local[*]") or "local[*]"


def _run_on(request: RunRequest, spark: SparkSession) -> RunSummary:
    with (
        open_store(request.settings.ledger, spark=lambda: spark) as store,
        _claim(store, request.settings) as claim,
    ):
        try:
            return _run_generation(request, spark, store, claim)
        except PySparkException as error:
            # Spark's message carries a Python traceback from its workers; the cause
            # the user can act on is its last "SomethingError: ..." line.
            log.debug("the query could not start", exc_info=True)
            raise QueryFailedError(f"the pipeline could not start: {cause(error)}") from None


@contextmanager
def _claim(store: OffsetStore, settings: Settings) -> Iterator[_Claim]:
    pipeline = settings.pipeline.name
    generation = generation_to_run(store, settings)
    refuse_without_history(store, settings, generation)
    layout = GenerationLayout(absolute_uri(settings.pipeline.root), generation)
    with RunLock(layout.run_lock, purpose="run") as run_lock:
        # An upgrade may have retired this generation between the choice and the lock.
        now_current = generation_to_run(store, settings)
        if now_current != generation:
            raise UpgradeIncompleteError(
                f"generation {generation} was retired while this run started (an upgrade "
                f"applied generation {now_current}); run again to start generation "
                f"{now_current}"
            )
        record = store.generation(pipeline, generation)
        yield _Claim(layout, record, run_lock)


def _run_generation(
    request: RunRequest, spark: SparkSession, store: OffsetStore, claim: _Claim
) -> RunSummary:
    settings, layout = request.settings, claim.layout
    pipeline = settings.pipeline.name
    generation_start(claim.record)  # refuses a plan left half applied, before any wait
    try:
        record = wait_for_handoff(store, claim.record, echo=request.echo, stop=request.stop)
    except WaitStopped:
        return RunSummary(pipeline, layout.generation, stopped_by="stop request")
    start = generation_start(record)
    # A handoff this generation gives: answered now if asked while it was stopped.
    successor = successor_of(store, pipeline, layout.generation)
    if successor is not None and successor.plan.applied_at_ms is not None:
        successor = _answer(request, store, layout, successor)
    bound = _bound(successor)
    phases = _phases(request, spark, layout, start, bound)
    signature = derive_signature(settings, layout, spark_version=spark.version)
    carried = record_generation(store, pipeline, layout, record, signature)
    unrecorded = mark_unrecorded_batches(store, pipeline, layout)
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
    for line in _banner(request, store, layout, start, phases, unrecorded, carried):
        request.echo(line)
    while True:
        supervision = Supervision(
            stop=request.stop,
            run_lock=claim.run_lock,
            listeners=(ledger, console),
            on_tick=PlanConsumption(store, pipeline, layout, start).check,
            on_stopped=lambda: wait_for_ledger(
                store, ledger, layout, last_committed_batch(layout.checkpoint)
            ),
            interrupt=HandoffRequested(store, pipeline, layout.generation)
            if bound is None
            else HandedOver(store, pipeline, layout, bound),
        )
        outcome = supervise(spark, phases, supervision)
        if outcome.stopped_by == HANDOFF_REQUESTED and bound is None:
            asked = successor_of(store, pipeline, layout.generation)
            if asked is not None:  # else rolled back meanwhile: go on as before
                successor = _answer(request, store, layout, asked)
                bound = _bound(successor)
        elif outcome.stopped_by in (HANDED_OVER, HANDOFF_WITHDRAWN) and bound is not None:
            successor = successor_of(store, pipeline, layout.generation)
            if successor is not None and outcome.stopped_by == HANDED_OVER:
                complete_handoff(store, pipeline, layout.generation)
                request.echo(
                    f"{pipeline}: generation {layout.generation} wrote every window ending at "
                    f"or before C = {iso_utc(bound)} and is retired; generation "
                    f"{successor.plan.to_generation} writes the windows after it"
                )
                break
            request.echo(
                "  handoff     rolled back: this generation writes the windows after C again"
            )
            bound = None
        else:
            break
        phases = _phases(request, spark, layout, start, bound)
    committed = {
        AGGREGATES_QUERY: last_committed_batch(layout.checkpoint),
        QUARANTINE_QUERY: last_committed_batch(layout.quarantine_checkpoint),
    }
    summary = RunSummary(
        pipeline=pipeline,
        generation=layout.generation,
        batches={name: batch for name, batch in committed.items() if batch is not None},
        stopped_by=outcome.stopped_by,
        progress=outcome.progress(),
    )
    outcome.raise_if_failed()
    return summary


def _phases(
    request: RunRequest,
    spark: SparkSession,
    layout: GenerationLayout,
    start: GenerationStart,
    bound: int | None,
) -> list[Phase]:
    replaying = start.from_plan and last_committed_batch(layout.checkpoint) is None
    return run_phases(
        spark,
        request.settings,
        layout,
        start,
        available_now=request.available_now,
        replaying=replaying,
        bounded_to_ms=bound,
    )


def _answer(
    request: RunRequest, store: OffsetStore, layout: GenerationLayout, successor: Successor
) -> Successor | None:
    """Take C or refuse it, with the queries stopped, and say which."""
    answered = take_handoff(store, layout, successor)
    if answered is None:
        request.echo("  handoff     rolled back before it was taken: going on as before")
        return None
    handoff = answered.handoff
    if handoff.refused is not None:
        request.echo(
            f"  handoff     refused to generation {answered.plan.to_generation}: "
            f"{handoff.refused}; this generation goes on as before"
        )
    else:
        request.echo(
            f"  handoff     took C = {iso_utc(handoff.boundary_ms)} for generation "
            f"{answered.plan.to_generation}: writing the windows ending at or before it, then "
            "stopping"
        )
    return answered


def _bound(successor: Successor | None) -> int | None:
    """C, once this generation took it and until it handed over."""
    if successor is None:
        return None
    handoff = successor.handoff
    if handoff.acknowledged is None:
        return None
    return handoff.boundary_ms


def _location(request: RunRequest, layout: GenerationLayout, *, quarantine: bool) -> str:
    """Where the generation writes: its directory, or the table every generation shares."""
    sink = open_sink(request.settings.sink, layout.root, quarantine=quarantine)
    return sink.location(layout.generation)


def _banner(
    request: RunRequest,
    store: OffsetStore,
    layout: GenerationLayout,
    start: GenerationStart,
    phases: list[Phase],
    unrecorded: list[int],
    carried: list[str],
) -> list[str]:
    until = "until caught up" if request.available_now else "until stopped"
    lines = [
        f"{request.settings.pipeline.name}: running generation {layout.generation} ({until})",
        f"  output      {_location(request, layout, quarantine=False)}",
        *([f"  table name  {name}"] if (name := request.settings.sink.table_name) else []),
        f"  quarantine  {_location(request, layout, quarantine=True)}",
        f"  checkpoint  {layout.checkpoint}",
        f"  ledger      {store.describe()}",
    ]
    if start.replay_after_ms is not None:
        lines.append(
            f"  upgrade     started from a plan: earlier generations wrote the "
            f"windows ending at or before W = {iso_utc(start.replay_after_ms)}"
        )
    if start.replay_from_event_ms is not None:
        lines.append(
            f"  upgrade     started from a plan: earlier generations, with other windows, "
            f"counted the events before {iso_utc(start.replay_from_event_ms)}"
        )
    lines += [phase.note for phase in phases if phase.note]
    # Changes since the signature this checkpoint recorded, which it carries: said, not
    # hidden (a signature an earlier version recorded lacks what this one compares).
    lines += [f"  signature   {sentence}" for sentence in carried]
    if unrecorded:
        lines.append(
            f"  ledger      batches {', '.join(map(str, unrecorded))} committed without a "
            "record (the last run was killed first): gap markers written"
        )
    return lines


def _observed(progress: Mapping[str, Any], name: str) -> int | None:
    observed = (progress.get("observedMetrics") or {}).get(METRICS.observation)
    if not observed or observed.get(name) is None:
        return None
    return int(observed[name])


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
