"""Narrow the batch-level restart per partition by reading the records in range.

The first record whose event time is at or after T_min is the minimum restart offset: every
record before it lies only in windows the old generation wrote. A malformed record never
feeds a window. A record whose event time cannot be judged without Spark (rare, see
``event_parser``) is taken as one that can: replaying more is safe, less is not.

The reading is the caller's: ``scan_partition`` folds any iterable of records, so the same
fold runs over an in-memory list in a test and over a Kafka stream in a worker process. A
scan reads its records in batches and folds them as such (``scan_batches``): a batch whose
every record has a time is counted with a few passes in C, not a Python loop per record.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import islice
from typing import cast

from pyspark_kafka_upgrade._domain.records.history import EARLIEST
from pyspark_kafka_upgrade._domain.records.record_errors import (
    InconsistentInputsError,
    PlanningError,
)
from pyspark_kafka_upgrade._domain.records.restart import PartitionPlan, RestartKind, RestartPlan
from pyspark_kafka_upgrade._domain.records.scans import (
    EventTime,
    PartitionScan,
    Record,
    RecordBatch,
    Scan,
    ScanRange,
    TighteningSummary,
    Unsure,
)
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.words import when


def replay_ranges(plan: RestartPlan) -> list[ScanRange]:
    """The batch-level replay range of each partition: what ``tighten`` reads."""
    ranges = []
    for each in plan.partitions:
        if each.restart_offset == EARLIEST:
            raise PlanningError(
                f"{each.partition[0]} partition {each.partition[1]} restarts at earliest; "
                "resolve it with the broker's earliest offsets (check_retention) before "
                "scanning"
            )
        ranges.append(ScanRange(each.partition, each.restart_offset, each.end_offset))
    return ranges


def scan_partition(
    span: ScanRange, records: Iterable[Record], t_min: int, *, count_feeding: bool = True
) -> PartitionScan:
    """Fold one partition's records in ``span`` into what tightening needs, in one pass.

    Constant memory whatever the range's length: only counts and the first feeding offset
    are kept. The records must ascend within the range (checked). Without
    ``count_feeding`` it stops at the first feeding record, which is cheaper but leaves the
    amplification unknown.
    """
    # Stopping at the first feeding record reads nothing past it: one record a batch.
    batches = in_batches(records) if count_feeding else in_batches(records, size=1)
    return scan_batches(span, batches, t_min, count_feeding=count_feeding)


def scan_batches(
    span: ScanRange, batches: Iterable[RecordBatch], t_min: int, *, count_feeding: bool = True
) -> PartitionScan:
    """``scan_partition`` of the records of ``batches``, one after the other."""
    first: int | None = None
    scanned = malformed = replayed = feeding = unsure = 0
    for offsets, times in checked_batches(batches, span):
        ints = _all_ints(times)
        if ints is not None:
            # Every record has a time: those at or after T_min feed.
            if first is None:
                if max(ints) < t_min:
                    scanned += len(ints)
                    continue
                at = list(map(t_min.__le__, ints)).index(True)
                first = offsets[at]
                if not count_feeding:
                    scanned += at + 1
                    break
                ints = ints[at:]
                scanned += at
            scanned += len(ints)
            replayed += len(ints)
            feeding += _at_or_after(ints, t_min)
            continue
        for offset, event_time in zip(offsets, times, strict=True):
            scanned += 1
            if event_time is None:
                malformed += 1
            elif isinstance(event_time, Unsure) or event_time >= t_min:
                unsure += isinstance(event_time, Unsure)
                feeding += 1
                if first is None:
                    first = offset
                    if not count_feeding:
                        break
            if first is not None:
                replayed += 1
        if first is not None and not count_feeding:
            break
    if not count_feeding:
        # Stopped at the first feeding record: what follows it is counted in offsets.
        replayed = 0 if first is None else span.end - first
    return PartitionScan(
        partition=span.partition,
        batch_level_offset=span.start,
        tightened_offset=span.end if first is None else first,
        end_offset=span.end,
        scanned_records=scanned,
        malformed_records=malformed,
        replayed_records=replayed,
        feeding_records=feeding if count_feeding else None,
        unsure_records=unsure,
    )


def _all_ints(times: Sequence[EventTime]) -> Sequence[int] | None:
    """``times`` when every record of the batch has a time (an int), else None."""
    return cast(Sequence[int], times) if set(map(type, times)) == {int} else None


def _at_or_after(times: Sequence[int], bound: int) -> int:
    """How many of ``times`` are at or after ``bound``."""
    if not times:
        return 0
    if min(times) >= bound:
        return len(times)
    return sum(map(bound.__le__, times))


def tighten(plan: RestartPlan, scan: Scan, *, count_feeding: bool = True) -> RestartPlan:
    """Move each partition's restart up to its first record that can feed an open window.

    ``scan(partition, start, end)`` yields the partition's records in [start, end), in
    offset order. One partition after the other; ``apply_scans`` takes scans made elsewhere.
    """
    t_min = plan.earliest_open_event_ms
    scans = {
        span.partition: scan_partition(
            span, scan(span.partition, span.start, span.end), t_min, count_feeding=count_feeding
        )
        for span in replay_ranges(plan)
    }
    return apply_scans(plan, scans)


def apply_scans(plan: RestartPlan, scans: Mapping[PartitionKey, PartitionScan]) -> RestartPlan:
    """``plan`` with each partition's restart moved to what its scan of ``replay_ranges`` found."""
    t_min = plan.earliest_open_event_ms
    partitions: list[PartitionPlan] = []
    kept: list[PartitionScan] = []
    for each in plan.partitions:
        found = scans.get(each.partition)
        span = (each.restart_offset, each.end_offset)
        if found is None or (found.batch_level_offset, found.end_offset) != span:
            raise InconsistentInputsError(
                f"no scan of {each.partition[0]} partition {each.partition[1]} over offsets "
                f"[{span[0]}, {span[1]}) to tighten its restart with"
            )
        kept.append(found)
        partitions.append(_tightened(each, found, t_min))
    return replace(plan, partitions=tuple(partitions), tightening=TighteningSummary(tuple(kept)))


def _tightened(each: PartitionPlan, found: PartitionScan, t_min: int) -> PartitionPlan:
    start, end = each.restart_offset, each.end_offset
    if start >= end:
        return each
    first = found.first_feeding_offset
    if first is None:
        reason = (
            f"no record in offsets {start}-{end - 1} has an event time at or after "
            f"{when(t_min)} ({found.scanned_records} records scanned, "
            f"{found.malformed_records} malformed), so nothing of this partition needs "
            f"rebuilding: it restarts at its end offset {end} (batch level: {each.reason})"
        )
        return replace(each, restart_offset=end, reason=reason, kind=RestartKind.NO_FEEDING_RECORD)
    reason = (
        f"offset {first} holds the first record at or after offset {start} whose "
        f"event time can fall in a window ending after W (batch level: {each.reason})"
    )
    if found.unsure_records:
        reason += (
            f"; {found.unsure_records} records could not be judged without Spark and were "
            "taken as feeding"
        )
    return replace(each, restart_offset=first, reason=reason, kind=RestartKind.FIRST_FEEDING_RECORD)


def checked_batches(batches: Iterable[RecordBatch], span: ScanRange) -> Iterator[RecordBatch]:
    """``batches`` of ``span``, checked to ascend within it: a scan that skips back or strays
    out would make every count after it wrong. A few passes in C for each batch."""
    previous = span.start - 1
    for offsets, times in batches:
        if len(offsets) != len(times):
            raise InconsistentInputsError(
                f"a batch of {len(offsets)} offsets came with {len(times)} event times"
            )
        if not offsets:
            continue
        ascending = all(map(operator.lt, offsets, islice(offsets, 1, None)))
        if not (ascending and previous < offsets[0] and offsets[-1] < span.end):
            # Find the first offending record, to name it.
            for offset in offsets:
                if not previous < offset < span.end:
                    _out_of_order(span, offset, previous)
                previous = offset
        previous = offsets[-1]
        yield offsets, times


def in_batches(records: Iterable[Record], size: int = 4096) -> Iterator[RecordBatch]:
    """``records`` grouped in batches of at most ``size``, as ``scan_batches`` folds them."""
    iterator = iter(records)
    while chunk := list(islice(iterator, size)):
        offsets, times = zip(*chunk, strict=True)
        yield offsets, times


def _out_of_order(span: ScanRange, offset: int, previous: int) -> None:
    topic, number = span.partition
    raise InconsistentInputsError(
        f"the scan of {topic} partition {number} over [{span.start}, {span.end}) "
        f"returned offset {offset} after {previous}: offsets must ascend within range"
    )
