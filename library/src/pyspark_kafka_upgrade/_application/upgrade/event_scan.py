"""Read the ranges a plan needs straight from Kafka and fold them, without starting Spark.

Each range streams through the source's own range reader (``read_records``: the records
``read_range`` reads, as plain lists) in batches of at most ``partition_reader.BATCH_RECORDS``
records, each batch's values judged by ``event_fast_path`` (exactly as ``event_parser``, the
pure-Python mirror of the job's Spark parser checked against it by a unit test, judges each),
and folded at once by ``tightening.scan_batches`` or ``late_records.count_waiting_batches``.
Memory stays bounded whatever the range's length: no record outlives its batch.

Parsing is CPU-bound Python, so a large scan spreads its partitions over worker processes,
one per core. A small one stays in this process, where a worker's start would cost more than
it saves. Either way a progress line reports the records read so far, on long scans.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyspark_kafka_upgrade._adapters.kafka.options import SourceOptions
from pyspark_kafka_upgrade._adapters.kafka.partition_reader import read_records
from pyspark_kafka_upgrade._adapters.kafka.ranges import OffsetRange
from pyspark_kafka_upgrade._application.upgrade.event_fast_path import FastEventParser
from pyspark_kafka_upgrade._core.planner.decide import ScanRequest, ScanResults
from pyspark_kafka_upgrade._core.planner.late_records import count_waiting_batches
from pyspark_kafka_upgrade._core.planner.tightening import scan_batches
from pyspark_kafka_upgrade._core.query.event_parser import EventParser
from pyspark_kafka_upgrade._domain.records.scans import (
    PartitionScan,
    RecordBatch,
    ScanRange,
    WaitingScan,
)
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.project import EventField

# Below this many records in all, one process does everything: a worker process takes about
# half a second to start and import this package, and on 2 cores the broker serving both
# workers takes its share. Measured on 2 cores (median of 3, records/s, workers=1 vs 2):
# 400k 613k vs 473k, 700k 701k vs 671k, 800k 628k vs 693k, 1.6M 764k vs 946k.
PARALLEL_FROM_RECORDS = 800_000
# How often a long scan says how far it got.
PROGRESS_EVERY_S = 5.0

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class EventSource:
    """Where the records come from and how their values parse: picklable, for workers."""

    options: SourceOptions
    events: tuple[EventField, ...]
    time_source: str
    time_field: str
    max_value_bytes: int

    def parser(self) -> FastEventParser:
        mirror = EventParser(
            events=self.events,
            time_source=self.time_source,
            time_field=self.time_field,
            max_value_bytes=self.max_value_bytes,
        )
        return FastEventParser(mirror, self.max_value_bytes)


def event_times(
    source: EventSource,
    span: ScanRange,
    parser: FastEventParser,
    on_batch: Callable[[int], None] = lambda records: None,
) -> Iterator[RecordBatch]:
    """The offsets and event times of the records in ``span``, batch by batch; ``on_batch``
    hears how many records each batch held, once it is folded."""
    topic, number = span.partition
    offsets = OffsetRange(topic, number, span.start, span.end)
    # The parser reads a record's Kafka timestamp only when it is the event time.
    kafka_time = parser.kafka_time
    for batch in read_records(source.options, offsets, timestamps=kafka_time):
        count = len(batch.offsets)
        # Microseconds, as Spark's timestamp column holds them.
        stamps = [ms * 1000 for ms in batch.timestamps_ms] if kafka_time else [None] * count
        yield batch.offsets, parser.event_times_ms(batch.values, stamps)
        on_batch(count)


def run_scans(
    request: ScanRequest,
    source: EventSource,
    *,
    progress: Progress,
    workers: int | None = None,
) -> ScanResults:
    """Read and fold every range of ``request``; partitions in parallel when that pays."""
    jobs = [("replay", span) for span in request.replay] + [
        ("waiting", span) for span in request.waiting
    ]
    busy = [job for job in jobs if job[1].end > job[1].start]
    total = request.records
    cores = workers or os.cpu_count() or 1
    started = time.monotonic()
    if total >= PARALLEL_FROM_RECORDS and len(busy) > 1 and cores > 1:
        found = _in_workers(jobs, request, source, min(cores, len(busy)), progress, total)
    else:
        found = _here(jobs, request, source, progress, total)
    if total >= PARALLEL_FROM_RECORDS:
        elapsed = max(time.monotonic() - started, 1e-9)
        progress(f"scanned {total:,} offsets in {elapsed:.1f} s ({total / elapsed:,.0f}/s)")
    replay: dict[PartitionKey, PartitionScan] = {}
    waiting: dict[PartitionKey, WaitingScan] = {}
    for result in found:
        if isinstance(result, PartitionScan):
            replay[result.partition] = result
        else:
            waiting[result.partition] = result
    return ScanResults(replay=replay, waiting=waiting)


def _fold(
    kind: str,
    span: ScanRange,
    request: ScanRequest,
    source: EventSource,
    on_batch: Callable[[int], None],
) -> PartitionScan | WaitingScan:
    """One range read and folded: the unit of work of a worker."""
    bound = request.t_min if kind == "replay" else request.late_before_event_ms
    # Nothing to read, or (late records without a filter) nothing can be late.
    idle = span.start >= span.end or bound is None
    records = () if idle else event_times(source, span, source.parser(), on_batch)
    with _collector_paused():
        if kind == "replay":
            return scan_batches(span, records, request.t_min)
        return count_waiting_batches(span, records, bound)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a range is folded.

    Each record decodes to a dict and the scan makes no reference cycle, so the collector
    would only walk every batch's objects again and again: a quarter of decoding's cost.
    Reference counting still frees each batch as soon as it is folded.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _here(
    jobs: list[tuple[str, ScanRange]],
    request: ScanRequest,
    source: EventSource,
    progress: Progress,
    total: int,
) -> list[PartitionScan | WaitingScan]:
    reporter = _Reporter(progress, total)
    done = [0]

    def on_batch(records: int) -> None:
        done[0] += records
        reporter.maybe(done[0])

    return [_fold(kind, span, request, source, on_batch) for kind, span in jobs]


# Set in each worker process by its initializer: the shared count of records read.
_WORKER_COUNTER: Any = None


def _init_worker(counter: Any) -> None:
    global _WORKER_COUNTER
    _WORKER_COUNTER = counter


def _fold_in_worker(
    kind: str, span: ScanRange, request: ScanRequest, source: EventSource
) -> PartitionScan | WaitingScan:
    return _fold(kind, span, request, source, _count_in_parent)


def _count_in_parent(records: int) -> None:
    with _WORKER_COUNTER.get_lock():
        _WORKER_COUNTER.value += records


def _in_workers(
    jobs: list[tuple[str, ScanRange]],
    request: ScanRequest,
    source: EventSource,
    workers: int,
    progress: Progress,
    total: int,
) -> list[PartitionScan | WaitingScan]:
    # spawn, not fork: the parent may hold Kafka clients' and the run lock's threads.
    context = multiprocessing.get_context("spawn")
    counter = context.Value("q", 0)
    reporter = _Reporter(progress, total)
    # The largest ranges first, so the last worker to finish is not the one given the most.
    ordered = sorted(jobs, key=lambda job: job[1].start - job[1].end)
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(counter,)
    ) as pool:
        pending: set[Future[PartitionScan | WaitingScan]] = {
            pool.submit(_fold_in_worker, kind, span, request, source) for kind, span in ordered
        }
        found = []
        while pending:
            done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            found += [future.result() for future in done]
            reporter.maybe(counter.value)
    return found


class _Reporter:
    """Prints ``scanning: n of total offsets`` every few seconds, only on long scans."""

    def __init__(self, progress: Progress, total: int) -> None:
        self._progress = progress
        self._total = total
        self._started = time.monotonic()
        self._last = self._started

    def maybe(self, done: int) -> None:
        now = time.monotonic()
        if now - self._last < PROGRESS_EVERY_S:
            return
        self._last = now
        rate = done / max(now - self._started, 1e-9)
        share = done / self._total if self._total else 1.0
        self._progress(
            f"scanning Kafka for event times: {done:,} of {self._total:,} offsets "
            f"({share:.0%}, {rate:,.0f} records/s)"
        )
