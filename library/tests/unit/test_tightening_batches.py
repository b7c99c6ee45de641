"""The scans' folds over batches (``scan_batches``, ``count_waiting_batches``) against the fold
one record at a time, written out here as it was before batches: the same counts and first
feeding offset for any event times (ints, malformed, unsure) cut in batches anywhere."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyspark_kafka_upgrade._core.planner.late_records import count_waiting, count_waiting_batches
from pyspark_kafka_upgrade._core.planner.tightening import in_batches, scan_batches, scan_partition
from pyspark_kafka_upgrade._domain.records.record_errors import InconsistentInputsError
from pyspark_kafka_upgrade._domain.records.scans import (
    UNSURE,
    EventTime,
    PartitionScan,
    RecordBatch,
    ScanRange,
    Unsure,
    WaitingScan,
)

SPAN_START = 100


def one_by_one(
    span: ScanRange, records: Sequence[tuple[int, EventTime]], t_min: int, count_feeding: bool
) -> PartitionScan:
    first: int | None = None
    scanned = malformed = replayed = feeding = unsure = 0
    for offset, event_time in records:
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


def waiting_one_by_one(
    span: ScanRange, records: Sequence[tuple[int, EventTime]], before: int
) -> WaitingScan:
    scanned = malformed = unsure = late = 0
    for _offset, event_time in records:
        scanned += 1
        if event_time is None:
            malformed += 1
        elif isinstance(event_time, Unsure):
            unsure += 1
        elif event_time < before:
            late += 1
    return WaitingScan(span.partition, span.start, span.end, scanned, malformed, unsure, late)


_TIMES = st.one_of(
    st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.none(), st.just(UNSURE)
)


@st.composite
def scans(draw: st.DrawFn) -> tuple[ScanRange, list[tuple[int, EventTime]], list[RecordBatch]]:
    """Records at ascending offsets with gaps, and the same records cut in batches anywhere."""
    times = draw(st.lists(_TIMES, max_size=60))
    gaps = draw(st.lists(st.integers(1, 3), min_size=len(times), max_size=len(times)))
    offsets, at = [], SPAN_START
    for gap in gaps:
        offsets.append(at)
        at += gap
    records = list(zip(offsets, times, strict=True))
    span = ScanRange(("t", 0), SPAN_START, at + draw(st.integers(0, 3)))
    cuts = sorted(draw(st.sets(st.integers(0, len(records)), max_size=8)))
    bounds = [0, *cuts, len(records)]
    batches: list[RecordBatch] = [
        ([offset for offset, _ in records[a:b]], [time for _, time in records[a:b]])
        for a, b in pairwise(bounds)
    ]
    return span, records, batches


@given(scan=scans(), t_min=st.integers(-1, 42), count_feeding=st.booleans())
def test_folding_batches_is_folding_records(
    scan: tuple[ScanRange, list[tuple[int, EventTime]], list[RecordBatch]],
    t_min: int,
    count_feeding: bool,
) -> None:
    span, records, batches = scan
    expected = one_by_one(span, records, t_min, count_feeding)
    assert scan_batches(span, batches, t_min, count_feeding=count_feeding) == expected
    assert scan_partition(span, records, t_min, count_feeding=count_feeding) == expected


@given(scan=scans(), before=st.integers(-1, 42))
def test_counting_waiting_batches_is_counting_records(
    scan: tuple[ScanRange, list[tuple[int, EventTime]], list[RecordBatch]], before: int
) -> None:
    span, records, batches = scan
    expected = waiting_one_by_one(span, records, before)
    assert count_waiting_batches(span, batches, before) == expected
    assert count_waiting(span, records, before) == expected


@pytest.mark.parametrize(
    "offsets",
    [[100, 102, 101], [99, 100], [100, 100], [100, 110]],
    ids=["back", "before the range", "repeated", "past the end"],
)
def test_a_batch_out_of_order_or_out_of_range_is_refused(offsets: list[int]) -> None:
    span = ScanRange(("t", 0), 100, 110)
    times: list[EventTime] = [1] * len(offsets)
    with pytest.raises(InconsistentInputsError, match="offsets must ascend within range"):
        scan_batches(span, [(offsets, times)], 0)
    with pytest.raises(InconsistentInputsError, match="offsets must ascend within range"):
        scan_batches(span, [(offsets[:1], times[:1]), (offsets[1:], times[1:])], 0)


def test_in_batches_keeps_every_record_in_order() -> None:
    records: list[tuple[int, EventTime]] = [
        (offset, offset % 7 or None) for offset in range(10_000)
    ]
    batches = list(in_batches(records, size=4096))
    assert [len(offsets) for offsets, _ in batches] == [4096, 4096, 1808]
    assert [
        pair for offsets, times in batches for pair in zip(offsets, times, strict=True)
    ] == records
