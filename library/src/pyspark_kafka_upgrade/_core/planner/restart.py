"""Where a new checkpoint restarts so that nothing is lost: the batch-level arithmetic.

An upgrade that needs a new checkpoint discards the old generation's state: the windows it
still held open, those with ``end > W``, where W is ``batchWatermarkMs`` of ``offsets/N`` for
the last committed batch N. The new generation rebuilds them by reading Kafka again from the
restart offsets planned here, and drops every (event, window) pair whose window ends at or
before W (the replay filter), since the old generation already wrote those windows.

The reasoning, in the order ``plan_restart`` follows it:

1. Every event at or after T_min (``windows.earliest_open_event_ms``) can reach an open
   window, and no event before it can.
2. The ledger's max event time per batch says which batches can hold such an event. The first
   batch whose max is at or after T_min is where the replay begins: its start offsets. No
   earlier batch has a valid event at or after T_min, so nothing earlier is needed.
3. A batch whose facts are unknown (a ledger gap marker, a batch missing from the ledger, a
   ledger behind the checkpoint) may hold anything, so it counts as feeding open windows,
   unless the watermark of the batch after it proves otherwise: that watermark is at least
   (max event time through the batch) - delay, so no event of the batch is later than
   watermark + delay. The delay is the largest any run of the generation used, since a
   delay may change between runs on one checkpoint. Replaying too much is safe, thanks to
   the replay filter; too little loses events.
4. Offsets come from the ledger and from the checkpoint's retained ``offsets/<k>`` files.
   When both know a boundary and disagree, the smaller offset wins (it replays more) and the
   plan says so. A partition that appears after the restart batch's start starts at the
   query's initial offset, or at earliest (-2) when nobody recorded it.

``tightening.tighten`` then narrows this batch-level answer per partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade._domain.records.history import (
    EARLIEST,
    BatchFacts,
    CheckpointBatch,
    CheckpointFacts,
    FlatOffsets,
)
from pyspark_kafka_upgrade._domain.records.record_errors import (
    InconsistentInputsError,
    LedgerAheadError,
    NoCommittedBatchError,
    UnknownWatermarkError,
)
from pyspark_kafka_upgrade._domain.records.restart import PartitionPlan, RestartKind, RestartPlan
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, format_offsets, unflatten
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.windows import earliest_open_event_ms
from pyspark_kafka_upgrade._domain.values.words import id_ranges, watermark_text, when

if TYPE_CHECKING:
    pass


@dataclass(frozen=True, slots=True)
class _Boundary:
    """Offsets known at the end of one batch, and where they come from."""

    batch_id: int
    offsets: FlatOffsets
    in_checkpoint: bool
    in_ledger: bool

    @property
    def source(self) -> str:
        # Built only for a reason or an error: the planner makes one boundary per batch.
        if self.in_checkpoint:
            return f"checkpoint offsets/{self.batch_id}"
        return f"ledger batch {self.batch_id}" if self.in_ledger else f"batch {self.batch_id}"


@dataclass(frozen=True, slots=True)
class _Feeding:
    """The first batch that can feed an open window, and why."""

    batch_id: int
    why: str


@dataclass(slots=True)
class _UnknownBatches:
    """Unknown batches by kind, kept as ascending ids for the notes."""

    gap: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    behind: list[int] = field(default_factory=list)
    bounded: list[int] = field(default_factory=list)


def plan_restart(
    *,
    window: WindowSpec,
    checkpoint: CheckpointFacts,
    ledger: Iterable[BatchFacts],
    gap_batch_ids: Iterable[int] = (),
    initial_offsets: FlatOffsets | None = None,
    max_watermark_delay_ms: int | None = None,
    written_through_ms: int | None = None,
) -> RestartPlan:
    """Plan the restart of a new generation after the old one's last committed batch.

    ``ledger`` holds the old generation's batch facts in any order; ``gap_batch_ids`` names
    the batches whose ledger write failed (their facts, if any, are not trusted).
    ``initial_offsets`` are the offsets the old query started at (``sources/0/0`` or the
    plan that started the generation); a partition missing from them, or given as -2/-1,
    restarts at EARLIEST when it is needed. ``max_watermark_delay_ms`` is the largest
    watermark delay any run of the old generation used (the delay may change between runs
    on one checkpoint); it bounds the events of unknown batches. The window's own delay is
    the least it can be.

    ``written_through_ms`` is for an old generation that itself started from a plan: its
    replay filter dropped every window ending at or before that time, because the
    generation before it wrote them. W is then never taken lower than it: a generation
    stopped early (its watermark still at its replay batch's, or a longer delay) must not
    make the next one write those windows again.

    One pass over the batches: linear in their number (and in partitions per batch).
    """
    last = checkpoint.last_committed_batch
    if last is None:
        raise NoCommittedBatchError(
            "the old checkpoint has no committed batch (no commits/<n> file), so there is "
            "nothing to upgrade from: start the new generation from its configured offsets"
        )
    delay = max(window.watermark_delay_ms, max_watermark_delay_ms or 0)
    gaps = frozenset(gap_batch_ids)
    records = _index_ledger(ledger, last, gaps)
    retained = {batch.batch_id: batch for batch in checkpoint.batches if batch.batch_id <= last}
    notes: list[str] = []
    watermark, final_end = _watermark_and_end(last, records, gaps, retained, notes)
    if written_through_ms is not None and written_through_ms > watermark:
        notes.append(
            f"the old generation's last watermark is {watermark_text(watermark)}, but it "
            "started from a plan that left every window ending at or before "
            f"{when(written_through_ms)} to the generation before it, which wrote them: "
            f"W is {when(written_through_ms)}"
        )
        watermark = written_through_ms
    t_min = earliest_open_event_ms(watermark, window)
    ledger_top = max(records, default=-1)
    initial = {key: offset for key, offset in (initial_offsets or {}).items() if offset >= 0}

    unknown = _UnknownBatches()
    boundary: _Boundary | None = None  # the last known end offsets before the current batch
    feeding: _Feeding | None = None
    restart: dict[PartitionKey, tuple[int, str]] = {}
    partitions: dict[PartitionKey, int] = {}  # every partition from the restart batch on
    first_seen: dict[PartitionKey, int] = {}

    for batch_id in range(last + 1):
        record = records.get(batch_id) if batch_id not in gaps else None
        start = _start_offsets(batch_id, record, boundary, notes)
        end = _end_offsets(batch_id, record, retained.get(batch_id), notes)
        if end is not None:
            _check_order(batch_id, start, end, boundary)
        if feeding is None:
            if record is not None:
                feeding = _known_feeds(batch_id, record, t_min, watermark)
            else:
                what = _classify_unknown(batch_id, gaps, ledger_top, unknown)
                following = _next_watermark(batch_id, last, checkpoint, retained, records, gaps)
                feeding = _unknown_feeds(batch_id, what, t_min, watermark, delay, following)
                if feeding is None:
                    unknown.bounded.append(batch_id)
            if feeding is not None:
                restart = _restart_offsets(batch_id, start, boundary, initial, feeding.why)
        elif record is None:
            _classify_unknown(batch_id, gaps, ledger_top, unknown)
        if feeding is not None and end is not None:
            for key in end:
                if key not in partitions:
                    first_seen[key] = batch_id
            partitions.update(end)
        if end is not None:
            boundary = _Boundary(batch_id, end, batch_id in retained, record is not None)
    notes.extend(_unknown_notes(unknown, ledger_top, last, t_min))

    if feeding is None:
        why = (
            "no committed batch can feed a window ending after "
            f"W={watermark_text(watermark)}: none of batches 0-{last} holds an event at or "
            f"after {when(t_min)}; restarting at the end of batch {last}, nothing to rebuild"
        )
        plans = tuple(
            PartitionPlan(key, offset, offset, why, RestartKind.NOTHING_TO_REBUILD)
            for key, offset in sorted(final_end.items())
        )
        return RestartPlan(window, last, watermark, t_min, None, plans, tuple(notes))

    plans_list: list[PartitionPlan] = []
    for key in sorted(partitions.keys() | final_end.keys()):
        end_offset = final_end.get(key, partitions.get(key, 0))
        if key in restart:
            offset, reason = restart[key]
            kind = RestartKind.FIRST_FEEDING_BATCH
        else:
            offset, reason = _new_partition(key, first_seen.get(key, last), initial, feeding)
            kind = RestartKind.NEW_PARTITION
        plans_list.append(PartitionPlan(key, offset, end_offset, reason, kind))
    return RestartPlan(
        window, last, watermark, t_min, feeding.batch_id, tuple(plans_list), tuple(notes)
    )


def _index_ledger(
    ledger: Iterable[BatchFacts], last: int, gaps: frozenset[int]
) -> dict[int, BatchFacts]:
    records: dict[int, BatchFacts] = {}
    for facts in ledger:
        if facts.batch_id < 0:
            raise InconsistentInputsError(f"the ledger holds a batch with id {facts.batch_id}")
        kept = records.setdefault(facts.batch_id, facts)
        if kept is not facts and kept != facts:
            raise InconsistentInputsError(
                f"the ledger holds two different records of batch {facts.batch_id}"
            )
    ahead = max([*records, *gaps], default=-1)
    if ahead > last:
        raise LedgerAheadError(
            f"the ledger records batch {ahead} but the checkpoint's last committed batch is "
            f"{last}: the ledger is ahead of the checkpoint, so it describes another "
            "checkpoint, or this checkpoint lost commits. Check that the checkpoint path "
            "belongs to this pipeline and generation; the planner will not guess"
        )
    return records


def _watermark_and_end(
    last: int,
    records: Mapping[int, BatchFacts],
    gaps: frozenset[int],
    retained: Mapping[int, CheckpointBatch],
    notes: list[str],
) -> tuple[int, dict[PartitionKey, int]]:
    """W and the end offsets of the last committed batch: the checkpoint's, if it has them."""
    in_checkpoint = retained.get(last)
    in_ledger = records.get(last) if last not in gaps else None
    if in_checkpoint is not None:
        if in_ledger is not None and in_ledger.watermark_ms != in_checkpoint.watermark_ms:
            notes.append(
                f"the ledger gives batch {last} watermark {in_ledger.watermark_ms} ms, the "
                f"checkpoint {in_checkpoint.watermark_ms} ms; the checkpoint decides"
            )
        return in_checkpoint.watermark_ms, dict(in_checkpoint.end_offsets)
    if in_ledger is not None:
        notes.append(
            f"the checkpoint no longer holds offsets/{last}; W and the final end offsets come "
            "from the ledger's record of that batch"
        )
        return in_ledger.watermark_ms, dict(in_ledger.end_offsets)
    raise UnknownWatermarkError(
        f"W is unknown: the checkpoint's offsets/{last} (the last committed batch) is gone "
        f"and the ledger has no trustworthy record of batch {last}. Without W the planner "
        "cannot tell written windows from open ones"
    )


def _start_offsets(
    batch_id: int, record: BatchFacts | None, boundary: _Boundary | None, notes: list[str]
) -> FlatOffsets | None:
    """The start offsets of a batch where the ledger states them, checked against the end of
    the batch before; None when the ledger does not state them."""
    if record is None or record.start_offsets is None:
        return None
    start = record.start_offsets
    if boundary is not None and boundary.batch_id == batch_id - 1 and start != boundary.offsets:
        for key, offset in boundary.offsets.items():
            begun = start.get(key)
            if begun is not None and begun < offset:
                raise InconsistentInputsError(
                    f"offsets go backwards: batch {batch_id} starts {key[0]} partition "
                    f"{key[1]} at {begun}, before the end of batch {batch_id - 1} ({offset}, "
                    f"{boundary.source})"
                )
            if begun is not None and begun > offset:
                notes.append(
                    f"batch {batch_id} starts {key[0]} partition {key[1]} at {begun}, after "
                    f"the end of batch {batch_id - 1} ({offset}): the old query skipped those "
                    "records; the restart uses the smaller offset"
                )
    return start


def _end_offsets(
    batch_id: int,
    record: BatchFacts | None,
    retained: CheckpointBatch | None,
    notes: list[str],
) -> FlatOffsets | None:
    """A batch's end offsets from the ledger and the checkpoint; the smaller where they differ."""
    if retained is None:
        return None if record is None else record.end_offsets
    if record is None or record.end_offsets == retained.end_offsets:
        return retained.end_offsets
    notes.append(
        f"the ledger and the checkpoint disagree on batch {batch_id}'s end offsets "
        f"({format_offsets(unflatten(record.end_offsets))} against "
        f"{format_offsets(unflatten(retained.end_offsets))}); the restart takes the smaller "
        "offset of each partition"
    )
    merged = dict(retained.end_offsets)
    for key, offset in record.end_offsets.items():
        merged[key] = min(offset, merged.get(key, offset))
    return merged


def _check_order(
    batch_id: int, start: FlatOffsets | None, end: FlatOffsets, boundary: _Boundary | None
) -> None:
    """Refuse offsets that go backwards. Linear in partitions; equal dicts compare in C."""
    restated = boundary is not None and start is not None and start == boundary.offsets
    if start is not None and not restated and start != end:
        for key, offset in start.items():
            ended = end.get(key)
            if ended is not None and ended < offset:
                raise InconsistentInputsError(
                    f"offsets go backwards: batch {batch_id} ends {key[0]} partition {key[1]} "
                    f"at {ended}, before its start {offset}"
                )
    if boundary is not None and boundary.offsets is not end and boundary.offsets != end:
        for key, offset in boundary.offsets.items():
            ended = end.get(key)
            if ended is not None and ended < offset:
                raise InconsistentInputsError(
                    f"offsets go backwards: batch {batch_id} ends {key[0]} partition {key[1]} "
                    f"at {ended}, before the end of batch {boundary.batch_id} ({offset}, "
                    f"{boundary.source})"
                )


def _next_watermark(
    batch_id: int,
    last: int,
    checkpoint: CheckpointFacts,
    retained: Mapping[int, CheckpointBatch],
    records: Mapping[int, BatchFacts],
    gaps: frozenset[int],
) -> int | None:
    """The watermark of the batch after ``batch_id``, which bounds ``batch_id``'s events."""
    following = batch_id + 1
    if following > last:
        return checkpoint.next_watermark_ms
    if following in retained:
        return retained[following].watermark_ms
    record = records.get(following) if following not in gaps else None
    return None if record is None else record.watermark_ms


def _classify_unknown(
    batch_id: int, gaps: frozenset[int], ledger_top: int, unknown: _UnknownBatches
) -> str:
    if batch_id in gaps:
        unknown.gap.append(batch_id)
        return f"batch {batch_id} has a ledger gap marker (its record was not written)"
    if batch_id > ledger_top:
        unknown.behind.append(batch_id)
        return f"batch {batch_id} is not in the ledger yet (the ledger is behind the checkpoint)"
    unknown.missing.append(batch_id)
    return f"batch {batch_id} is missing from the ledger"


def _known_feeds(batch_id: int, record: BatchFacts, t_min: int, watermark: int) -> _Feeding | None:
    """Whether a batch the ledger knows held a valid event at or after T_min."""
    latest = record.max_event_time_ms
    if latest is None or latest < t_min:
        return None
    return _Feeding(
        batch_id,
        f"batch {batch_id} is the first whose events (max {when(latest)}) can fall in a window "
        f"ending after W={watermark_text(watermark)}",
    )


def _unknown_feeds(
    batch_id: int,
    why_unknown: str,
    t_min: int,
    watermark: int,
    delay: int,
    next_watermark: int | None,
) -> _Feeding | None:
    """Whether an unknown batch may hold an event at or after T_min: yes, unless the watermark
    of the batch after it, at least (its max event time - delay), proves otherwise."""
    if next_watermark is not None and next_watermark + delay < t_min:
        return None
    bound = (
        ""
        if next_watermark is None
        else f" (the watermark after it allows events up to {when(next_watermark + delay)})"
    )
    return _Feeding(
        batch_id,
        f"{why_unknown}, so its events are unknown and may fall in a window ending after "
        f"W={watermark_text(watermark)}{bound}; it is treated as the first batch that can",
    )


def _restart_offsets(
    batch_id: int,
    start: FlatOffsets | None,
    boundary: _Boundary | None,
    initial: Mapping[PartitionKey, int],
    why: str,
) -> dict[PartitionKey, tuple[int, str]]:
    """The start offsets of the restart batch, per partition, with the reason for each."""
    chosen: dict[PartitionKey, tuple[int, str]] = {}
    if batch_id == 0:
        for key, offset in initial.items():
            chosen[key] = (offset, f"{why}; the old query started it at offset {offset}")
        return chosen
    previous = boundary if boundary is not None and boundary.batch_id == batch_id - 1 else None
    if start is not None:
        for key, offset in start.items():
            chosen[key] = (offset, f"{why}; it started reading this partition at offset {offset}")
    if previous is not None:
        for key, offset in previous.offsets.items():
            if key not in chosen or offset < chosen[key][0]:
                chosen[key] = (
                    offset,
                    f"{why}; it started reading this partition at offset {offset}, the end of "
                    f"batch {batch_id - 1} ({previous.source})",
                )
    if start is None and previous is None:
        if boundary is not None:
            for key, offset in boundary.offsets.items():
                chosen[key] = (
                    offset,
                    f"{why}; its start offsets are not recorded, so the restart uses the end "
                    f"of batch {boundary.batch_id} ({boundary.source}), the last known "
                    f"boundary before it: offset {offset}",
                )
        else:
            for key, offset in initial.items():
                chosen[key] = (
                    offset,
                    f"{why}; no offsets are recorded before it, so the restart uses the "
                    f"query's initial offset {offset}",
                )
    return chosen


def _new_partition(
    key: PartitionKey, first_seen: int, initial: Mapping[PartitionKey, int], feeding: _Feeding
) -> tuple[int, str]:
    """A partition that the restart batch's start offsets do not name."""
    if first_seen > feeding.batch_id:
        appears = f"this partition first appears in batch {first_seen}"
    elif feeding.batch_id == 0:
        appears = "the query's initial offsets do not name this partition"
    else:
        appears = f"this partition is not in batch {feeding.batch_id}'s start offsets"
    if key in initial:
        return (
            initial[key],
            f"{feeding.why}; {appears} and starts at the query's initial offset {initial[key]}",
        )
    return (
        EARLIEST,
        f"{feeding.why}; {appears}, and the offset Spark started it at (the earliest the "
        "broker had then) is not recorded, so it restarts at earliest (-2)",
    )


def _unknown_notes(unknown: _UnknownBatches, ledger_top: int, last: int, t_min: int) -> list[str]:
    notes = []
    if unknown.gap:
        notes.append(f"the ledger has gap markers for batches {id_ranges(unknown.gap)}")
    if unknown.missing:
        notes.append(f"batches {id_ranges(unknown.missing)} are missing from the ledger")
    if unknown.behind:
        top = "has no batch" if ledger_top < 0 else f"ends at batch {ledger_top}"
        notes.append(
            f"the ledger is behind the checkpoint: it {top}, the checkpoint's last commit is "
            f"{last} (batches {id_ranges(unknown.behind)} not recorded)"
        )
    if unknown.bounded:
        notes.append(
            f"the events of unknown batches {id_ranges(unknown.bounded)} cannot reach an open "
            f"window: the watermark after each bounds them below {when(t_min)}"
        )
    if unknown.gap or unknown.missing or unknown.behind:
        notes.append(
            "unknown batches are treated as possibly feeding open windows, with offsets from "
            "the checkpoint's offsets/ files where the ledger has none; replaying more is "
            "safe because the replay filter drops windows already written"
        )
    return notes
