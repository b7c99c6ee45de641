"""A synthetic old generation for the planner: a stream, its ledger and its checkpoint.

Pure, and fast enough for 100,000 batches: the planner's benchmarks need no broker. The
answers (:func:`expected_of`) come from the stream itself, not from the planner's
bookkeeping, so that a wrong plan is caught rather than timed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark_kafka_upgrade._core.planner.restart import plan_restart
from pyspark_kafka_upgrade._domain.records.history import (
    BatchFacts,
    CheckpointBatch,
    CheckpointFacts,
    ledger_facts,
)
from pyspark_kafka_upgrade._domain.records.ledger import BatchRecord
from pyspark_kafka_upgrade._domain.records.restart import RestartPlan
from pyspark_kafka_upgrade._domain.records.scans import Scan
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, format_offsets
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.windows import earliest_open_event_ms

TOPIC = "page-views"
BASE_MS = 1_700_000_200_000  # a multiple of ten minutes, so windows start on the hour
DISORDER_MS = 3_000  # how far an event may trail its batch's second
RETAINED = 100  # offsets/ files Spark keeps by default
# Batches missing from the ledger, and batches the ledger marks as gaps: the
# planner must prove them harmless from the watermark of the batch after each.
MISSING_EVERY, GAP_EVERY = 9_973, 9_967


@dataclass(frozen=True)
class Stream:
    """Every partition holds the same records: ``per_batch`` of them per batch, which
    covers ``batch_ms`` of event time."""

    partitions: int
    per_batch: int
    batch_ms: int

    def offset(self, batch_id: int) -> int:
        """Every partition's offset at the start of ``batch_id``."""
        return batch_id * self.per_batch

    def event_time(self, offset: int) -> int:
        """The batch's span of event time, spread over its records, minus a pseudo-random
        lag; the last record of a batch has none, so it is the batch's max."""
        batch_id, position = divmod(offset, self.per_batch)
        lag = 0
        if position != self.per_batch - 1:
            lag = (position * 7_919 + batch_id * 104_729) % DISORDER_MS
        return (
            BASE_MS + (batch_id * self.per_batch + position) * self.batch_ms // self.per_batch - lag
        )

    def max_event_time(self, batch_id: int) -> int:
        return self.event_time(self.offset(batch_id + 1) - 1)


@dataclass(frozen=True)
class History:
    """A synthetic old generation: the ledger as texts, its gaps, and the checkpoint."""

    stream: Stream
    window: WindowSpec
    batches: int
    ledger: list[BatchRecord]
    gaps: list[int]
    checkpoint: CheckpointFacts


def build_history(stream: Stream, window: WindowSpec, batches: int) -> History:
    ledger: list[BatchRecord] = []
    gaps: list[int] = []
    retained: list[CheckpointBatch] = []
    watermark = 0
    for batch_id in range(batches):
        end = stream.offset(batch_id + 1)
        start_text = None if batch_id == 0 else _text(stream.offset(batch_id), stream.partitions)
        latest = stream.max_event_time(batch_id)
        # The min is a lower bound here; the planner does not use it.
        earliest = BASE_MS + batch_id * stream.batch_ms - DISORDER_MS
        text = _text(end, stream.partitions)
        if batch_id % MISSING_EVERY != 5:
            ledger.append(_record(batch_id, start_text, text, watermark, earliest, latest))
        if batch_id % GAP_EVERY == 7:
            gaps.append(batch_id)
        if batch_id >= batches - RETAINED:
            ends = {(TOPIC, p): end for p in range(stream.partitions)}
            retained.append(CheckpointBatch(batch_id, ends, watermark))
        # Batch maxima rise, so the max so far is this batch's.
        watermark = max(watermark, latest - window.watermark_delay_ms)
    checkpoint = CheckpointFacts(batches - 1, tuple(retained), next_watermark_ms=watermark)
    return History(stream, window, batches, ledger, gaps, checkpoint)


def _text(offset: int, partitions: int) -> str:
    return format_offsets({TOPIC: dict.fromkeys(range(partitions), offset)})


def _record(
    batch_id: int, start: str | None, end: str, watermark: int, low: int, high: int
) -> BatchRecord:
    return BatchRecord(
        pipeline="page-views",
        generation=1,
        batch_id=batch_id,
        query_id="0c5c4a49-6a2e-4f4e-9d43-2f0a8f1f6c11",
        run_id="7d1d0e1b-2a5e-4d3f-8f6e-9a9b2b3c4d5e",
        batch_timestamp_ms=BASE_MS + batch_id * 1_000,
        start_offsets=start,
        end_offsets=end,
        batch_watermark_ms=watermark,
        input_rows=0,
        min_event_time_ms=low,
        max_event_time_ms=high,
        malformed_rows=0,
        recorded_at_ms=BASE_MS + batch_id * 1_000,
    )


def facts_of(history: History) -> list[BatchFacts]:
    """What `upgrade plan` does with the records the store returns: the library's own path."""
    return list(ledger_facts(history.ledger))


def plan_of(history: History, facts: list[BatchFacts]) -> RestartPlan:
    return plan_restart(
        window=history.window,
        checkpoint=history.checkpoint,
        ledger=facts,
        gap_batch_ids=history.gaps,
        initial_offsets={(TOPIC, p): 0 for p in range(history.stream.partitions)},
    )


def scan_of(stream: Stream) -> Scan:
    def scan(partition: PartitionKey, start: int, end: int) -> Iterator[tuple[int, int | None]]:
        for offset in range(start, end):
            yield offset, stream.event_time(offset)

    return scan


@dataclass(frozen=True)
class Expected:
    restart_batch: int
    restart_offset: int
    tightened_offset: int
    feeding_per_partition: int


def expected_of(history: History) -> Expected:
    """The answers, from the stream itself rather than from the planner's bookkeeping."""
    stream = history.stream
    watermark = history.checkpoint.watermark_ms
    assert watermark is not None
    t_min = earliest_open_event_ms(watermark, history.window)
    first = next(b for b in range(history.batches) if stream.max_event_time(b) >= t_min)
    end = stream.offset(history.batches)
    feeding = [o for o in range(stream.offset(first), end) if stream.event_time(o) >= t_min]
    return Expected(first, stream.offset(first), feeding[0], len(feeding))


def check(plan: RestartPlan, tightened: RestartPlan, history: History, want: Expected) -> list[str]:
    partitions = range(history.stream.partitions)
    wrong = []
    if plan.restart_batch != want.restart_batch:
        wrong.append(f"restart batch {plan.restart_batch}, expected {want.restart_batch}")
    if plan.restart_offsets != {(TOPIC, p): want.restart_offset for p in partitions}:
        wrong.append(f"restart offsets {plan.starting_offsets}, expected {want.restart_offset}")
    if tightened.restart_offsets != {(TOPIC, p): want.tightened_offset for p in partitions}:
        wrong.append(
            f"tightened offsets {tightened.starting_offsets}, expected {want.tightened_offset}"
        )
    summary = tightened.tightening
    feeding = want.feeding_per_partition * history.stream.partitions
    if summary is None or summary.feeding_records != feeding:
        wrong.append(f"feeding records {summary and summary.feeding_records}, expected {feeding}")
    return wrong


def stream_for(window: WindowSpec, partitions: int, scan_records: int, batch_ms: int) -> Stream:
    """A stream whose replay range holds about ``scan_records`` records: the replay covers
    at most the window, the delay and the disorder of event time."""
    replay_ms = window.duration_ms + window.watermark_delay_ms + DISORDER_MS
    replay_batches = max(1, replay_ms // batch_ms)
    return Stream(partitions, max(1, scan_records // (partitions * replay_batches)), batch_ms)
