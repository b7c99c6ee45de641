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
4. Offsets come from the ledger and from the checkpoint's retained ``offsets/<k>`` files
   (``old_batches``). When both know a boundary and disagree, the smaller offset wins (it
   replays more) and the plan says so. A partition that appears after the restart batch's
   start starts at the query's initial offset, or at earliest (-2) when nobody recorded it.

``tightening.tighten`` then narrows this batch-level answer per partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pyspark_kafka_upgrade._core.planner.old_batches import (
    Boundary,
    OldBatches,
    check_order,
    end_offsets,
    next_watermark,
    start_offsets,
    watermark_and_end,
)
from pyspark_kafka_upgrade._domain.records.handoff import check_boundary
from pyspark_kafka_upgrade._domain.records.history import (
    EARLIEST,
    BatchFacts,
    CheckpointFacts,
    FlatOffsets,
)
from pyspark_kafka_upgrade._domain.records.restart import PartitionPlan, RestartKind, RestartPlan
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.windows import earliest_open_event_ms
from pyspark_kafka_upgrade._domain.values.words import id_ranges, watermark_text, when


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
    handoff_at_ms: int | None = None,
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

    ``handoff_at_ms`` is C of a handoff: the old generation goes on and writes every window
    ending at or before C, so W is C. It must be a window end the old watermark has not
    reached (``handoff.check_boundary``).

    One pass over the batches: linear in their number (and in partitions per batch).
    """
    batches = OldBatches.of(checkpoint, ledger, frozenset(gap_batch_ids))
    last = batches.last
    notes: list[str] = []
    watermark, final_end = watermark_and_end(batches, notes)
    watermark = _carried_watermark(watermark, written_through_ms, notes)
    watermark = _handoff_watermark(watermark, handoff_at_ms, window, notes)
    t_min = earliest_open_event_ms(watermark, window)
    delay = max(window.watermark_delay_ms, max_watermark_delay_ms or 0)
    initial = {key: offset for key, offset in (initial_offsets or {}).items() if offset >= 0}
    walk = _walk(batches, _Cut(watermark, t_min, delay), initial, notes)
    notes.extend(_unknown_notes(walk.unknown, batches.ledger_top, last, t_min))
    if walk.feeding is None:
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
    plans = _partition_plans(walk, walk.feeding, final_end, initial, last)
    return RestartPlan(window, last, watermark, t_min, walk.feeding.batch_id, plans, tuple(notes))


@dataclass(frozen=True, slots=True)
class _Cut:
    """Where written windows end and open ones begin, and what bounds an unknown batch."""

    watermark: int  # W
    t_min: int
    delay: int  # the largest watermark delay any run of the generation used


@dataclass(slots=True)
class _Walk:
    """The pass over the batches so far: where the replay begins, what it reads."""

    unknown: _UnknownBatches = field(default_factory=lambda: _UnknownBatches())
    boundary: Boundary | None = None  # the last known end offsets before the current batch
    feeding: _Feeding | None = None
    restart: dict[PartitionKey, tuple[int, str]] = field(default_factory=dict)
    partitions: dict[PartitionKey, int] = field(default_factory=dict)  # from the restart on
    first_seen: dict[PartitionKey, int] = field(default_factory=dict)


def _walk(
    batches: OldBatches, cut: _Cut, initial: Mapping[PartitionKey, int], notes: list[str]
) -> _Walk:
    """One pass over batches 0 to last: offsets checked, the first feeding batch found."""
    walk = _Walk()
    for batch_id in range(batches.last + 1):
        record = batches.record(batch_id)
        start = start_offsets(batch_id, record, walk.boundary, notes)
        end = end_offsets(batch_id, record, batches.retained.get(batch_id), notes)
        if end is not None:
            check_order(batch_id, start, end, walk.boundary)
        if walk.feeding is None:
            walk.feeding = _feeds(batch_id, record, batches, cut, walk.unknown)
            if walk.feeding is not None:
                why = walk.feeding.why
                walk.restart = _restart_offsets(batch_id, start, walk.boundary, initial, why)
        elif record is None:
            _classify_unknown(batch_id, batches, walk.unknown)
        if walk.feeding is not None and end is not None:
            for key in end:
                if key not in walk.partitions:
                    walk.first_seen[key] = batch_id
            walk.partitions.update(end)
        if end is not None:
            in_checkpoint = batch_id in batches.retained
            walk.boundary = Boundary(batch_id, end, in_checkpoint, record is not None)
    return walk


def _feeds(
    batch_id: int,
    record: BatchFacts | None,
    batches: OldBatches,
    cut: _Cut,
    unknown: _UnknownBatches,
) -> _Feeding | None:
    """Whether a batch, known or not, may hold an event at or after T_min."""
    if record is not None:
        return _known_feeds(batch_id, record, cut.t_min, cut.watermark)
    what = _classify_unknown(batch_id, batches, unknown)
    following = next_watermark(batch_id, batches)
    feeding = _unknown_feeds(batch_id, what, cut, following)
    if feeding is None:
        unknown.bounded.append(batch_id)
    return feeding


def _partition_plans(
    walk: _Walk,
    feeding: _Feeding,
    final_end: Mapping[PartitionKey, int],
    initial: Mapping[PartitionKey, int],
    last: int,
) -> tuple[PartitionPlan, ...]:
    """Every partition read from the restart batch on, or at the end: where it restarts."""
    plans: list[PartitionPlan] = []
    for key in sorted(walk.partitions.keys() | final_end.keys()):
        end_offset = final_end.get(key, walk.partitions.get(key, 0))
        if key in walk.restart:
            offset, reason = walk.restart[key]
            kind = RestartKind.FIRST_FEEDING_BATCH
        else:
            offset, reason = _new_partition(key, walk.first_seen.get(key, last), initial, feeding)
            kind = RestartKind.NEW_PARTITION
        plans.append(PartitionPlan(key, offset, end_offset, reason, kind))
    return tuple(plans)


def _carried_watermark(watermark: int, written_through_ms: int | None, notes: list[str]) -> int:
    """W, never below what the generation before the old one wrote (see ``plan_restart``)."""
    if written_through_ms is None or written_through_ms <= watermark:
        return watermark
    notes.append(
        f"the old generation's last watermark is {watermark_text(watermark)}, but it "
        "started from a plan that left every window ending at or before "
        f"{when(written_through_ms)} to the generation before it, which wrote them: "
        f"W is {when(written_through_ms)}"
    )
    return written_through_ms


def _handoff_watermark(
    watermark: int, handoff_at_ms: int | None, window: WindowSpec, notes: list[str]
) -> int:
    """W of a handoff: C, ahead of the old generation's watermark."""
    if handoff_at_ms is None:
        return watermark
    check_boundary(handoff_at_ms, window, watermark)
    notes.append(
        f"a handoff at C = {when(handoff_at_ms)}: the old generation's watermark is "
        f"{watermark_text(watermark)}, and it goes on writing every window ending at or "
        f"before C beside the new one: W is C"
    )
    return handoff_at_ms


def _classify_unknown(batch_id: int, batches: OldBatches, unknown: _UnknownBatches) -> str:
    if batch_id in batches.gaps:
        unknown.gap.append(batch_id)
        return f"batch {batch_id} has a ledger gap marker (its record was not written)"
    if batch_id > batches.ledger_top:
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
    batch_id: int, why_unknown: str, cut: _Cut, next_watermark: int | None
) -> _Feeding | None:
    """Whether an unknown batch may hold an event at or after T_min: yes, unless the watermark
    of the batch after it, at least (its max event time - delay), proves otherwise."""
    if next_watermark is not None and next_watermark + cut.delay < cut.t_min:
        return None
    bound = (
        ""
        if next_watermark is None
        else f" (the watermark after it allows events up to {when(next_watermark + cut.delay)})"
    )
    return _Feeding(
        batch_id,
        f"{why_unknown}, so its events are unknown and may fall in a window ending after "
        f"W={watermark_text(cut.watermark)}{bound}; it is treated as the first batch that can",
    )


def _restart_offsets(
    batch_id: int,
    start: FlatOffsets | None,
    boundary: Boundary | None,
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
