"""The loop a run's queries live in, in one place: start each phase in order, wait, stop.

What runs arrives as data (``queries.Phase``); the supervisor only starts it, watches it,
and stops it gracefully on a stop request, a lost run lock, a failure or the end of input.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

from pyspark_kafka_upgrade._adapters.spark.spark_errors import cause
from pyspark_kafka_upgrade._adapters.storage.run_lock import RunLock
from pyspark_kafka_upgrade._application.run.queries import Phase, QuerySpec
from pyspark_kafka_upgrade._domain.errors import PipelineError

log = logging.getLogger(__name__)

# How long a stop waits for the batch in flight to finish before it interrupts it.
_BATCH_FINISH_TIMEOUT_S = 300.0
_POLL_S = 1

END_OF_INPUT = "end of input"


class QueryFailedError(PipelineError):
    """A streaming query stopped with an error; the message is Spark's, shortened."""


@dataclass(frozen=True, slots=True)
class Supervision:
    """How a run is watched, besides its queries."""

    stop: threading.Event  # set by a signal handler (or a test)
    run_lock: RunLock
    listeners: Sequence[StreamingQueryListener] = ()
    # Called on every poll, and once more after the queries stopped.
    on_tick: Callable[[], None] = lambda: None
    # Called after every query stopped, while the listeners still listen.
    on_stopped: Callable[[], None] = lambda: None
    # Polled as ``on_tick``: a reason to stop gracefully, between batches (a handoff).
    interrupt: Callable[[], str | None] = lambda: None


@dataclass
class Outcome:
    stopped_by: str = END_OF_INPUT
    queries: list[StreamingQuery] = field(default_factory=list)  # in start order

    def progress(self) -> dict[str, list[dict[str, Any]]]:
        """Query name -> its recent progress events (numRecentProgressUpdates of them)."""
        found: dict[str, list[dict[str, Any]]] = {}
        for query in self.queries:
            found.setdefault(query.name, []).extend(query.recentProgress)
        return found

    def raise_if_failed(self) -> None:
        for query in self.queries:
            error = query.exception()
            if error is not None:
                raise QueryFailedError(f"query {query.name} failed: {cause(error)}")


def supervise(spark: SparkSession, phases: Sequence[Phase], supervision: Supervision) -> Outcome:
    """Run ``phases`` in order until one does not finish, or the last one stops."""
    outcome = Outcome()
    for listener in supervision.listeners:
        spark.streams.addListener(listener)
    try:
        for index, phase in enumerate(phases):
            started: list[StreamingQuery] = []
            for spec in phase.queries:
                # One at a time: a query that started is stopped on the way out even when the
                # next one fails to start.
                started.append(_start(spec))
                outcome.queries.append(started[-1])
            outcome.stopped_by = _wait(started, supervision)
            if index == len(phases) - 1 or not _finished(started, outcome, supervision):
                break
    finally:
        try:
            _stop_gracefully(outcome.queries)
        except BaseException:
            # A second Ctrl-C: stop now, before the run lock is released on the way out, so
            # no other run or upgrade can take the checkpoint while a query still writes.
            for query in outcome.queries:
                query.stop()
            raise
        supervision.on_tick()  # the first commit may have landed while stopping
        supervision.on_stopped()
        for listener in supervision.listeners:
            spark.streams.removeListener(listener)
    return outcome


def _finished(started: list[StreamingQuery], outcome: Outcome, supervision: Supervision) -> bool:
    """Whether a phase ran to its end, so the next may start on the same checkpoints."""
    if outcome.stopped_by != END_OF_INPUT or any(q.exception() is not None for q in started):
        return False
    # Spark reports a query inactive a moment before it forgets its name, and a new query of
    # that name would be refused until then: stop() waits for it.
    for query in started:
        query.stop()
    return not supervision.stop.is_set() and not supervision.run_lock.lost


def _start(spec: QuerySpec) -> StreamingQuery:
    return spec.sink.start(
        spec.frame,
        generation=spec.generation,
        query_name=spec.name,
        checkpoint=spec.checkpoint,
        trigger=spec.trigger,
    )


def _wait(queries: list[StreamingQuery], supervision: Supervision) -> str:
    while True:
        supervision.on_tick()
        if supervision.stop.is_set():
            return "stop request"
        if supervision.run_lock.lost:
            log.error("the run lock was taken by another process; stopping")
            return "lost run lock"
        if any(query.exception() is not None for query in queries):
            return "query failure"
        if reason := supervision.interrupt():
            return reason
        if not any(query.isActive for query in queries):
            return END_OF_INPUT
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
