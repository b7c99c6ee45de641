"""The listener that writes one ledger record per committed micro-batch.

Spark reports a batch's progress after the batch has committed, on its listener bus, a
thread of its own: events may arrive late (even after the query stopped), and a progress
event may be reported again after a restart. So every write is an idempotent upsert on
(pipeline, generation, batch id), and a write that fails is never silent: it is logged, and
a gap marker is recorded so that the upgrade planner knows the ledger is incomplete there
and falls back to the checkpoint. If even the marker cannot be written, the batch is simply
missing from the ledger; the planner finds that hole by comparing batch ids with the
checkpoint, so the outcome is the same.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyspark_kafka_upgrade._adapters.spark.progress_events import JsonProgressListener
from pyspark_kafka_upgrade._domain.records.ledger import BatchRecord, LedgerGap
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import now_ms
from pyspark_kafka_upgrade._domain.values.offsets import format_offsets, offsets_from_json_object

log = logging.getLogger(__name__)

# Attempts per write, and the pause before each retry: a brief database or filesystem hiccup
# should not leave a gap, and the listener bus can afford to wait a second.
_ATTEMPTS = 3
_RETRY_PAUSE_S = (0.2, 0.8)


@dataclass(frozen=True, slots=True)
class BatchMetricNames:
    """Where the batch's observed metrics are: the ``observe()`` name and its columns."""

    observation: str
    input_rows: str
    malformed_rows: str
    min_event_time_us: str
    max_event_time_us: str


class ProgressError(ValueError):
    """A progress event without what a ledger record needs."""


def batch_record_from_progress(
    progress: Mapping[str, Any],
    *,
    pipeline: str,
    generation: int,
    metrics: BatchMetricNames,
    recorded_at_ms: int,
) -> BatchRecord:
    """The ledger record of one progress event, in its JSON form (``query.lastProgress``)."""
    try:
        sources = progress["sources"]
        observed = (progress.get("observedMetrics") or {}).get(metrics.observation)
        if observed is None and int(progress["numInputRows"]) > 0:
            # Without its metrics a batch with rows would look like one without events, and
            # the planner would skip it: record a gap instead, which it treats as unknown.
            raise ProgressError(
                f"batch {progress['batchId']} has rows but no observed metrics "
                f"{metrics.observation!r}"
            )
        observed = observed or {}
        min_us = observed.get(metrics.min_event_time_us)
        max_us = observed.get(metrics.max_event_time_us)
        return BatchRecord(
            pipeline=pipeline,
            generation=generation,
            batch_id=int(progress["batchId"]),
            query_id=str(progress["id"]),
            run_id=str(progress["runId"]),
            batch_timestamp_ms=_iso_to_ms(progress["timestamp"]),
            start_offsets=_merged_offsets(sources, "startOffset"),
            end_offsets=_merged_offsets(sources, "endOffset") or "{}",
            batch_watermark_ms=_iso_to_ms((progress.get("eventTime") or {}).get("watermark")),
            input_rows=int(progress["numInputRows"]),
            # Floor and ceiling: a millisecond bound must still contain every event.
            min_event_time_ms=None if min_us is None else int(min_us) // 1000,
            max_event_time_ms=None if max_us is None else -(-int(max_us) // 1000),
            malformed_rows=int(observed.get(metrics.malformed_rows) or 0),
            recorded_at_ms=recorded_at_ms,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ProgressError(f"progress event cannot be recorded: {error!r}") from error


def _iso_to_ms(text: object) -> int:
    if text is None:
        # No watermark yet (a query without one never gets here: the job always sets it).
        return 0
    moment = datetime.fromisoformat(str(text))
    return round(moment.timestamp() * 1000)


def _merged_offsets(sources: list[Mapping[str, Any]], key: str) -> str | None:
    """All sources' offsets as one canonical offsets text; None when none has any."""
    merged: dict[str, dict[int, int]] = {}
    for source in sources:
        value = source.get(key)
        if value is None or value == "None":
            continue
        if isinstance(value, str):
            value = json.loads(value)
        merged.update(offsets_from_json_object(value, what=f"source {key}"))
    return format_offsets(merged) if merged else None


class LedgerListener(JsonProgressListener):
    """Records the batches of the query named ``query_name`` in ``store``."""

    def __init__(
        self,
        store: OffsetStore,
        *,
        pipeline: str,
        generation: int,
        query_name: str,
        metrics: BatchMetricNames,
        clock_ms: Callable[[], int] = now_ms,
    ) -> None:
        self._store = store
        self.pipeline = pipeline
        self._pipeline = pipeline
        self._generation = generation
        self._query_name = query_name
        self._metrics = metrics
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._condition = threading.Condition(self._lock)
        self.last_batch_id: int | None = None  # the highest batch id handled, written or not
        self.failed_writes = 0

    def on_progress(self, progress: dict[str, Any]) -> None:
        if progress.get("name") != self._query_name:
            return
        batch_id = progress.get("batchId")
        try:
            record = batch_record_from_progress(
                progress,
                pipeline=self._pipeline,
                generation=self._generation,
                metrics=self._metrics,
                recorded_at_ms=self._clock_ms(),
            )
            self._write(record)
        except Exception as error:
            self._on_failure(batch_id, error)
        with self._condition:
            if isinstance(batch_id, int):
                self.last_batch_id = max(batch_id, self.last_batch_id or batch_id)
            self._condition.notify_all()

    def wait_for_batch(self, batch_id: int, timeout_s: float) -> bool:
        """Wait until the progress of ``batch_id`` (or a later one) has been handled."""
        deadline = time.monotonic() + timeout_s
        with self._condition:
            while self.last_batch_id is None or self.last_batch_id < batch_id:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._condition.wait(remaining)
        return True

    def _write(self, record: BatchRecord) -> None:
        for attempt in range(_ATTEMPTS):
            try:
                self._store.record_batch(record)
                return
            except Exception:
                if attempt == _ATTEMPTS - 1:
                    raise
                time.sleep(_RETRY_PAUSE_S[min(attempt, len(_RETRY_PAUSE_S) - 1)])

    def _on_failure(self, batch_id: object, error: Exception) -> None:
        self.failed_writes += 1
        batch = batch_id if isinstance(batch_id, int) else None
        reason = f"batch {batch} was not recorded: {error}"
        log.error(
            "ledger: %s (pipeline %r generation %d); recording a gap so that the upgrade "
            "planner falls back to the checkpoint for this batch",
            reason,
            self._pipeline,
            self._generation,
        )
        gap = LedgerGap(
            pipeline=self._pipeline,
            generation=self._generation,
            batch_id=batch,
            reason=reason,
            recorded_at_ms=self._clock_ms(),
        )
        try:
            self._store.record_gap(gap)
        except Exception as gap_error:
            log.critical(
                "ledger: the gap marker for batch %s could not be written either (%s); the "
                "ledger now misses this batch, which the upgrade planner detects as a hole",
                batch,
                gap_error,
            )
