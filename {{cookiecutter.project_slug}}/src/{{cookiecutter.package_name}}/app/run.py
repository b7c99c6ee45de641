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
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.errors import PySparkException, StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from .. import transformations
from ..checkpoint.errors import CheckpointError
from ..checkpoint.reader import read_checkpoint
from ..errors import PipelineError
from ..layout import GenerationLayout
from ..ledger.listener import BatchMetricNames, LedgerListener
from ..ledger.opening import open_store
from ..ledger.records import GenerationRecord, GenerationStatus, LedgerGap
from ..ledger.store import OffsetStore
from ..run_lock import RunLock
from ..settings import LoadedSettings, Settings
from ..sink import Trigger, start_file_sink
from ..source.connector import read_kafka_stream
from ..spark_session import build_spark_session
from ..storage import absolute_uri
from ..upgrade.advisor import Verdict, advise
from ..upgrade.plan import UpgradePlan
from ..upgrade.signature import PipelineSignature
from .generations import committed_generations, current_generation
from .progress import ConsoleProgress
from .signature import derive_signature
from .timestamps import iso_utc

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


class UpgradeRequiredError(PipelineError):
    """The settings or code changed in a way the current checkpoint cannot carry."""

    exit_code = 3


class UpgradeIncompleteError(PipelineError):
    """The newest generation was planned, but its plan was not applied to the end."""

    exit_code = 3


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
    if spark is None:
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
            return _run_with_store(request, session)
        finally:
            session.stop()
    return _run_with_store(request, spark)


def _run_with_store(request: RunRequest, spark: SparkSession) -> RunSummary:
    settings = request.settings
    with open_store(settings.ledger, spark=lambda: spark) as store:
        generation = current_generation(store, settings.pipeline.name)
        _refuse_without_history(store, settings, generation)
        layout = GenerationLayout(absolute_uri(settings.pipeline.root), generation)
        with RunLock(layout.run_lock, purpose="run") as run_lock:
            # An upgrade may have retired this generation between the choice and the lock.
            now_current = current_generation(store, settings.pipeline.name)
            if now_current != generation:
                raise UpgradeIncompleteError(
                    f"generation {generation} was retired while this run started (an upgrade "
                    f"applied generation {now_current}); run again to start generation "
                    f"{now_current}"
                )
            try:
                return _run_generation(request, spark, store, layout, run_lock)
            except PySparkException as error:
                # Spark's message carries a Python traceback from its workers; the cause
                # the user can act on is its last "SomethingError: ..." line.
                log.debug("the query could not start", exc_info=True)
                raise QueryFailedError(f"the pipeline could not start: {cause(error)}") from None


def _refuse_without_history(store: OffsetStore, settings: Settings, generation: int) -> None:
    """Refuse to start generation 1 on a lost ledger when later generations exist.

    With no record, the current generation looks like 1; resuming its checkpoint would write
    again the windows later generations wrote, and without the plan that started them.
    """
    if generation != 1 or store.generations(settings.pipeline.name):
        return
    later = [n for n in committed_generations(settings.pipeline.root) if n > 1]
    if later:
        raise UpgradeIncompleteError(
            f"the ledger ({store.describe()}) knows no generation of "
            f"{settings.pipeline.name!r}, but {settings.pipeline.root} holds committed "
            f"checkpoints of generations {', '.join(map(str, later))}: the ledger was lost or "
            "ledger.location points elsewhere. Restore the ledger or point ledger.location at "
            "it; running now would resume generation 1 and write its windows again"
        )


def _run_generation(
    request: RunRequest,
    spark: SparkSession,
    store: OffsetStore,
    layout: GenerationLayout,
    run_lock: RunLock,
) -> RunSummary:
    settings = request.settings
    pipeline = settings.pipeline.name
    record = store.generation(pipeline, layout.generation)
    start = generation_start(record)
    notes: list[str] = []
    replaying = start.from_plan and _last_committed(layout.checkpoint) is None
    # The replay must run as one batch with whatever has arrived since: split by a rate
    # limit, a partition that races ahead would raise the new query's watermark and make
    # replayed events of a lagging partition late, though the old generation counted them.
    # So a rate-limited generation first runs its replay alone, unlimited and "available
    # now" (one batch), then restarts on the same checkpoint with its limit.
    replay: DataFrame | None = None
    if replaying and settings.kafka.max_offsets_per_trigger:
        unlimited = replace(settings, kafka=replace(settings.kafka, max_offsets_per_trigger=0))
        replay = _aggregates_frame(spark, unlimited, layout, start)
        notes.append(
            "  rate limit  off for the replay batch, which runs on its own; on again after it"
        )
    plan_pending = [start.plan is not None and start.plan.consumed_at_ms is None]

    def mark_plan_consumed() -> None:
        if plan_pending[0] and _mark_plan_consumed(store, pipeline, layout):
            plan_pending[0] = False

    aggregates = _aggregates_frame(spark, settings, layout, start)
    quarantine = _quarantine_frame(spark, settings, layout, start)
    _record_generation(
        store, settings, layout, derive_signature(settings, layout, spark_version=spark.version)
    )
    unrecorded = _mark_unrecorded_batches(store, pipeline, layout)
    if unrecorded:
        notes.append(
            f"  ledger      batches {', '.join(map(str, unrecorded))} committed without a "
            "record (the last run was killed first): gap markers written"
        )

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
    if start.replay_after_ms is not None:
        request.echo(
            f"  upgrade     started from a plan: earlier generations wrote the "
            f"windows ending at or before W = {iso_utc(start.replay_after_ms)}"
        )
    if start.replay_from_event_ms is not None:
        request.echo(
            f"  upgrade     started from a plan: earlier generations, with other windows, "
            f"counted the events before {iso_utc(start.replay_from_event_ms)}"
        )
    for note in notes:
        request.echo(note)
    queries: list[StreamingQuery] = []  # every query this run started, in start order

    def launch(name: str, frame: DataFrame, path: str, checkpoint: str, when: Trigger) -> None:
        queries.append(
            start_file_sink(
                frame,
                query_name=name,
                path=path,
                checkpoint=checkpoint,
                file_format=settings.sink.format,
                trigger=when,
            )
        )

    try:
        replayed = True
        if replay is not None:
            launch(
                AGGREGATES_QUERY,
                replay,
                layout.output,
                layout.checkpoint,
                replace(trigger, available_now=True),
            )
            summary.stopped_by = _wait(queries, request.stop, run_lock, on_tick=mark_plan_consumed)
            replayed = summary.stopped_by == "end of input" and queries[0].exception() is None
            if replayed:
                # Spark reports the query inactive a moment before it forgets its name, and a
                # new query of that name would be refused until then: stop() waits for it.
                queries[0].stop()
                replayed = not request.stop.is_set() and not run_lock.lost
        if replayed:
            first = len(queries)
            launch(AGGREGATES_QUERY, aggregates, layout.output, layout.checkpoint, trigger)
            launch(
                QUARANTINE_QUERY,
                quarantine,
                layout.quarantine,
                layout.quarantine_checkpoint,
                trigger,
            )
            summary.stopped_by = _wait(
                queries[first:], request.stop, run_lock, on_tick=mark_plan_consumed
            )
    finally:
        try:
            _stop_gracefully(queries)
        except BaseException:
            # A second Ctrl-C: stop now, before the run lock is released on the way out, so
            # no other run or upgrade can take the checkpoint while a query still writes.
            for query in queries:
                query.stop()
            raise
        if plan_pending[0]:
            mark_plan_consumed()  # the first commit may have landed while stopping
        committed = {
            AGGREGATES_QUERY: _last_committed(layout.checkpoint),
            QUARANTINE_QUERY: _last_committed(layout.quarantine_checkpoint),
        }
        _wait_for_ledger(store, ledger, layout, committed.get(AGGREGATES_QUERY))
        spark.streams.removeListener(ledger)
        spark.streams.removeListener(console)
    for query in queries:
        summary.progress.setdefault(query.name, []).extend(query.recentProgress)
    summary.batches = {name: batch for name, batch in committed.items() if batch is not None}
    _raise_if_failed(queries)
    return summary


def _last_committed(checkpoint: str) -> int | None:
    """The checkpoint's last committed batch: the truth, where lastProgress may name the
    next batch id of a trigger that found no data."""
    try:
        return read_checkpoint(checkpoint).last_committed_batch
    except CheckpointError:
        return None  # the query failed before it wrote a checkpoint


def _wait_for_ledger(
    store: OffsetStore, ledger: LedgerListener, layout: GenerationLayout, batch_id: int | None
) -> None:
    """Wait until the ledger holds (or has given up on) the last committed batch.

    Progress events reach the listener asynchronously, after the batch committed. A batch
    committed by an earlier run is already in the store; one of this run may still be on
    its way.
    """
    if batch_id is None:
        return
    deadline = time.monotonic() + _LEDGER_CATCH_UP_TIMEOUT_S
    while time.monotonic() < deadline:
        last = store.last_batch(ledger.pipeline, layout.generation)
        if (last is not None and last.batch_id >= batch_id) or ledger.wait_for_batch(
            batch_id, timeout_s=_POLL_S
        ):
            return
        if any(gap.batch_id == batch_id for gap in store.gaps(ledger.pipeline, layout.generation)):
            return  # committed by a run that was killed: marked, never to be recorded
    log.warning(
        "the ledger has not recorded batch %d within %.0f s; the upgrade planner will fall "
        "back to the checkpoint for it",
        batch_id,
        _LEDGER_CATCH_UP_TIMEOUT_S,
    )


@dataclass(frozen=True, slots=True)
class GenerationStart:
    """How a generation's queries start: from the settings, or from an applied plan."""

    plan: UpgradePlan | None = None

    @property
    def from_plan(self) -> bool:
        return self.plan is not None

    @property
    def starting_offsets(self) -> str | None:
        """For the aggregates query; None: the settings' own."""
        return None if self.plan is None else self.plan.starting_offsets

    @property
    def quarantine_offsets(self) -> str | None:
        return None if self.plan is None else self.plan.quarantine_starting_offsets

    @property
    def replay_after_ms(self) -> int | None:
        """W of the generation before: (event, window) pairs with window end <= W are
        dropped for the whole life of the generation, since its checkpoint expects that
        query plan."""
        return None if self.plan is None else self.plan.replay_filter.window_end_after_ms

    @property
    def replay_from_event_ms(self) -> int | None:
        """Set when a window change split the generations in event time."""
        return None if self.plan is None else self.plan.replay_filter.event_time_from_ms


def generation_start(record: GenerationRecord | None) -> GenerationStart:
    """The start of the generation ``record`` describes; refuses a plan left half applied."""
    if record is None or record.plan is None:
        return GenerationStart()
    plan = UpgradePlan.from_json(record.plan)
    if record.status is GenerationStatus.PLANNED and plan.applied_at_ms is None:
        raise UpgradeIncompleteError(
            f"generation {record.generation} of {record.pipeline!r} is planned but its plan "
            "was not applied completely: run `upgrade apply` to finish it, or "
            "`upgrade rollback` to go back"
        )
    return GenerationStart(plan)


def _aggregates_frame(
    spark: SparkSession, settings: Settings, layout: GenerationLayout, start: GenerationStart
) -> DataFrame:
    raw = read_kafka_stream(
        spark,
        settings.kafka,
        starting_offsets=start.starting_offsets,
        initial_offsets_location=layout.initial_offsets,
    )
    parsed = transformations.observe_batch_metrics(_parse(raw, settings))
    return transformations.windowed_aggregates(
        transformations.valid_events(parsed),
        window=settings.window.spec,
        keys=settings.aggregation.keys,
        metrics=settings.aggregation.metric_specs,
        replay_after_ms=start.replay_after_ms,
        replay_from_event_ms=start.replay_from_event_ms,
    )


def _quarantine_frame(
    spark: SparkSession, settings: Settings, layout: GenerationLayout, start: GenerationStart
) -> DataFrame:
    # The quarantine is stateless: it goes on exactly where the generation before stopped.
    raw = read_kafka_stream(
        spark,
        settings.kafka,
        starting_offsets=start.quarantine_offsets,
        initial_offsets_location=layout.quarantine_initial_offsets,
    )
    return transformations.quarantine_records(_parse(raw, settings))


def _mark_plan_consumed(store: OffsetStore, pipeline: str, layout: GenerationLayout) -> bool:
    """Once the generation committed a batch, its plan has done its work: say so.

    True when the plan is (now) marked consumed.
    """
    record = store.generation(pipeline, layout.generation)
    plan = None if record is None or record.plan is None else UpgradePlan.from_json(record.plan)
    if record is None or plan is None or plan.consumed_at_ms is not None:
        return True
    if _last_committed(layout.checkpoint) is None:
        return False
    now_ms = time.time_ns() // 1_000_000
    store.record_generation(
        replace(record, plan=plan.consumed(now_ms).to_json(), updated_at_ms=now_ms)
    )
    return True


def _parse(raw: DataFrame, settings: Settings) -> DataFrame:
    return transformations.parse_events(
        raw,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )


def _mark_unrecorded_batches(
    store: OffsetStore, pipeline: str, layout: GenerationLayout
) -> list[int]:
    """Write a gap marker for each committed batch the ledger lacks, and return their ids.

    A driver killed between a commit and its listener's write (the listener runs after the
    commit, asynchronously) leaves that batch committed but unrecorded for good, since Spark
    never runs a committed batch again. Its offsets and watermark are in the checkpoint, but
    not its event-time bounds, so a record made up now would mislead the planner; a marker
    says the ledger is incomplete there, and the planner falls back to the checkpoint.
    """
    try:
        committed = read_checkpoint(layout.checkpoint).commits
    except CheckpointError:
        return []  # no checkpoint yet: nothing committed
    known = {batch.batch_id for batch in store.batches(pipeline, layout.generation)}
    gaps = store.gaps(pipeline, layout.generation)
    known |= {gap.batch_id for gap in gaps if gap.batch_id is not None}
    missing = [batch_id for batch_id in committed if batch_id not in known]
    now_ms = time.time_ns() // 1_000_000
    for batch_id in missing:
        store.record_gap(
            LedgerGap(
                pipeline=pipeline,
                generation=layout.generation,
                batch_id=batch_id,
                reason=f"batch {batch_id} committed, but its run stopped before the ledger "
                "recorded it",
                recorded_at_ms=now_ms,
            )
        )
    return missing


def _record_generation(
    store: OffsetStore,
    settings: Settings,
    layout: GenerationLayout,
    signature: PipelineSignature,
) -> None:
    now_ms = time.time_ns() // 1_000_000
    existing = store.generation(settings.pipeline.name, layout.generation)
    if existing is not None and existing.signature:
        advice = advise(existing.signature, signature.to_json())
        if advice.verdict is Verdict.NEEDS_NEW_CHECKPOINT:
            raise UpgradeRequiredError(
                f"generation {layout.generation}'s checkpoint cannot carry this version of the "
                "pipeline: "
                + "; ".join(advice.sentences())
                + " Run `upgrade plan` to see how a new generation would start."
            )
        for sentence in advice.sentences()[:-1]:
            log.info("signature change on the same checkpoint: %s", sentence)
    store.record_generation(
        GenerationRecord(
            pipeline=settings.pipeline.name,
            generation=layout.generation,
            status=GenerationStatus.RUNNING,
            # With the largest watermark delay of any run so far: the upgrade planner needs
            # it to bound the events of batches the ledger missed.
            signature=signature.with_history(
                None if existing is None else existing.signature
            ).to_json(),
            plan=None if existing is None else existing.plan,
            created_at_ms=now_ms if existing is None else existing.created_at_ms,
            updated_at_ms=now_ms,
        )
    )


def _wait(
    queries: list[StreamingQuery],
    stop: threading.Event,
    run_lock: RunLock,
    *,
    on_tick: Callable[[], None],
) -> str:
    while True:
        on_tick()
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
    """Let each query finish the batch in flight, then stop it.

    A query that is between triggers stops at once. One that is running a batch stops as
    soon as that batch has reported its progress, which Spark does after the batch
    committed. When batches run back to back, the next one may have begun by then; stopping
    interrupts it, and the checkpoint replays it on the next run.
    """
    in_flight = {id(query): _reported_batch(query) for query in queries}
    pending = [query for query in queries if query.isActive]
    deadline = time.monotonic() + _BATCH_FINISH_TIMEOUT_S
    while pending:
        for query in list(pending):
            finished = (
                not query.isActive
                or not query.status.get("isTriggerActive")
                or _reported_batch(query) != in_flight[id(query)]
                or time.monotonic() >= deadline
            )
            if finished:
                query.stop()
                pending.remove(query)
        if pending:
            time.sleep(0.1)


def _reported_batch(query: StreamingQuery) -> object:
    progress = query.lastProgress
    return None if progress is None else progress.get("batchId")


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
    return cause(error)


_CAUSE_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$")


def cause(error: BaseException) -> str:
    """The most specific one-line cause in a Spark error's text, at most 500 characters."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    causes = [match for line in lines if (match := _CAUSE_LINE.match(line))]
    if causes:
        name, message = causes[-1].groups()
        return f"{name}: {message}"[:500]
    return (lines[0] if lines else type(error).__name__)[:500]


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
