"""Narrow the batch-level restart per partition by reading the records in range.

The first record whose event time is at or after T_min is the minimum restart offset: every
record before it lies only in windows the old generation wrote. A malformed record never
feeds a window. A record whose event time cannot be judged without Spark (rare, see
``event_parser``) is taken as one that can: replaying more is safe, less is not.

The reading is the caller's: ``scan_partition`` folds any iterable of records, so the same
fold runs over an in-memory list in a test and over a Kafka stream in a worker process.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace

from pyspark_kafka_upgrade._domain.records.history import EARLIEST
from pyspark_kafka_upgrade._domain.records.record_errors import (
    InconsistentInputsError,
    PlanningError,
)
from pyspark_kafka_upgrade._domain.records.restart import PartitionPlan, RestartKind, RestartPlan
from pyspark_kafka_upgrade._domain.records.scans import (
    PartitionScan,
    Record,
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
    first: int | None = None
    scanned = malformed = replayed = feeding = unsure = 0
    for offset, event_time in checked_in_order(records, span):
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


def checked_in_order(records: Iterable[Record], span: ScanRange) -> Iterator[Record]:
    """``records`` of ``span``, checked to ascend within it: a scan that skips back or strays
    out would make every count after it wrong."""
    start, end = span.start, span.end
    previous = start - 1
    for offset, event_time in records:
        if not previous < offset < end:
            topic, number = span.partition
            raise InconsistentInputsError(
                f"the scan of {topic} partition {number} over [{start}, {end}) "
                f"returned offset {offset} after {previous}: offsets must ascend within range"
            )
        previous = offset
        yield offset, event_time
