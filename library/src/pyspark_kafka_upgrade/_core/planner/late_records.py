"""The records already waiting after the old generation's end that the new one drops as late.

Those whose every window ended at or before W (event time before T_min) are late: the new
generation's replay filter drops them, as an uninterrupted run would have, since it judges
late rows against the previous batch's watermark, which is at least W. The plan says how
many, so that the restart's one loss against a run that never stopped, the events it cannot
promise (FACTS, "What a restart can promise"), is a number and not a surprise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from pyspark_kafka_upgrade._core.planner.tightening import checked_batches, in_batches
from pyspark_kafka_upgrade._domain.records.per_partition import ByPartition, PartitionTotal
from pyspark_kafka_upgrade._domain.records.record_errors import PlanningError
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.scans import (
    Record,
    RecordBatch,
    Scan,
    ScanRange,
    Unsure,
    WaitingScan,
)
from pyspark_kafka_upgrade._domain.values.json_record import JsonRecord, Shape, Written
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.windows import earliest_open_event_ms
from pyspark_kafka_upgrade._domain.values.words import when


def count_waiting(
    span: ScanRange, records: Iterable[Record], before_event_ms: int | None
) -> WaitingScan:
    """Fold one partition's waiting records: how many the replay filter drops whole.

    ``before_event_ms`` None means no filter, so nothing is late and nothing is read.
    """
    batches = in_batches(records) if before_event_ms is not None else ()
    return count_waiting_batches(span, batches, before_event_ms)


def count_waiting_batches(
    span: ScanRange, batches: Iterable[RecordBatch], before_event_ms: int | None
) -> WaitingScan:
    """``count_waiting`` of the records of ``batches``, one after the other."""
    if span.start < 0 or span.end < 0:
        raise PlanningError(
            f"{span.partition[0]} partition {span.partition[1]}: the range [{span.start}, "
            f"{span.end}) to scan for late records needs resolved offsets (earliest and "
            "latest from the broker)"
        )
    scanned = malformed = unsure = late = 0
    if before_event_ms is not None:
        for _offsets, times in checked_batches(batches, span):
            scanned += len(times)
            if set(map(type, times)) == {int}:
                # Every record has a time: a count in C, not a loop.
                ints = cast(Sequence[int], times)
                late += sum(map(before_event_ms.__gt__, ints))
                continue
            for event_time in times:
                if event_time is None:
                    malformed += 1
                elif isinstance(event_time, Unsure):
                    unsure += 1
                elif event_time < before_event_ms:
                    late += 1
    return WaitingScan(span.partition, span.start, span.end, scanned, malformed, unsure, late)


@dataclass(frozen=True, slots=True)
class LateRecords(JsonRecord):
    """The records waiting after the old generation's end that the new one drops as late."""

    json_shape = Shape(
        "before_event_ms",
        Written("scanned_records"),
        Written("malformed_records"),
        Written("unsure_records"),
        Written("late_records"),
    )

    before_event_ms: int | None  # late: an event time before this; None: no filter, none late
    by_window_end: bool  # the bound is T_min of W (the window filter), not an event-time split
    partitions: tuple[WaitingScan, ...]

    scanned_records = PartitionTotal()
    malformed_records = PartitionTotal()
    unsure_records = PartitionTotal()
    late_records = PartitionTotal()
    # Where each partition's scan began (the old generation's end) and where it stopped (the
    # latest offsets when the plan was made).
    start_offsets = ByPartition[int]("start_offset")
    end_offsets = ByPartition[int]("end_offset")

    def explain(self) -> str:
        """One sentence for the human output of ``upgrade plan``."""
        return explain_late(
            self.before_event_ms,
            self.by_window_end,
            self.scanned_records,
            self.late_records,
            self.unsure_records,
        )


def explain_late(
    before_event_ms: int | None,
    by_window_end: bool,
    scanned_records: int,
    late_records: int,
    unsure_records: int = 0,
) -> str:
    """The late records as one sentence: how many, and why the new generation drops them."""
    if before_event_ms is None:
        return "Late records: none; the new generation filters nothing out."
    cut = when(before_event_ms)
    rule = (
        "every window they fall in ended at or before W, so the new generation drops "
        "them, as a run that never stopped would have"
        if by_window_end
        else "the generations split there, so the new generation drops them, and the "
        "old one never read them"
    )
    later = f"Records that arrive later with event times before {cut} are dropped as well."
    unsure = (
        f" {unsure_records} records could not be judged without Spark and are not counted."
        if unsure_records
        else ""
    )
    if scanned_records == 0:
        return (
            "Late records: none waiting yet (no record after the old generation's end "
            f"offsets). {later}"
        )
    waiting = f"the {scanned_records} records waiting after the old generation's end offsets"
    if late_records == 0:
        return f"Late records: none of {waiting} has an event time before {cut}. {later}{unsure}"
    return (
        f"Late records: {late_records} of {waiting} have event times before {cut}: "
        f"{rule}. {later}{unsure}"
    )


def late_threshold(replay_filter: ReplayFilter, window: WindowSpec) -> tuple[int | None, bool]:
    """(the event time before which ``replay_filter`` drops a record of ``window`` whole,
    whether that bound comes from the window-end filter rather than an event-time split)."""
    threshold = replay_filter.late_before_event_ms(window)
    after = replay_filter.window_end_after_ms
    return threshold, after is not None and threshold == earliest_open_event_ms(after, window)


def count_late_records(
    ranges: Mapping[PartitionKey, tuple[int, int]],
    scan: Scan,
    *,
    window: WindowSpec,
    replay_after_ms: int | None,
    replay_from_event_ms: int | None,
) -> LateRecords:
    """Count the records of ``ranges`` that the new generation's replay filter drops whole.

    ``ranges`` maps each partition to the half-open offsets [start, end) already waiting
    after the old generation's end offsets; ``scan`` reads them as for ``tighten``.
    ``window`` is the new generation's, whose windows the filter judges. A malformed record
    is never late; it goes to the quarantine. One partition after the other.
    """
    replay_filter = ReplayFilter(replay_after_ms, replay_from_event_ms)
    threshold, by_window_end = late_threshold(replay_filter, window)
    found = []
    for partition, (start, end) in sorted(ranges.items()):
        span = ScanRange(partition, start, end)
        reading = () if threshold is None or start >= end else scan(partition, start, end)
        found.append(count_waiting(span, reading, threshold))
    return LateRecords(threshold, by_window_end, tuple(found))
