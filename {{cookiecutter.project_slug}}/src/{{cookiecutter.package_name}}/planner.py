"""The upgrade planner's arithmetic: where a new checkpoint restarts so that nothing is lost.

An upgrade that needs a new checkpoint discards the old generation's state: the windows it
still held open, those with ``end > W``, where W is ``batchWatermarkMs`` of ``offsets/N`` for
the last committed batch N. The new generation rebuilds them by reading Kafka again from the
restart offsets planned here, and drops every (event, window) pair whose window ends at or
before W (the replay filter), since the old generation already wrote those windows.

The reasoning, in the order ``plan_restart`` follows it:

1. An event at time t can reach an open window exactly when the LATEST window containing it
   ends after W. Windows start at multiples of the slide (Spark's default, no start time),
   so the latest one starts at ``floor(t / slide) * slide`` and the condition holds for every
   t at or after ``T_min = (floor((W - size) / slide) + 1) * slide``. For tumbling windows
   that is ``floor(W / size) * size``, the start of the window that W falls in.
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

``tighten`` narrows the batch-level answer per partition by scanning the records in range:
the first record whose event time is at or after T_min is the minimum restart offset.

``count_late_records`` scans the records already waiting after the old generation's end
offsets. Those whose every window ended at or before W (event time before T_min) are late:
the new generation's replay filter drops them, as an uninterrupted run would have, since it
judges late rows against the previous batch's watermark, which is at least W. The plan
says how many, so that the restart's one loss against a run that never stopped, the events
it cannot promise (FACTS, "What a restart can promise"), is a number and not a surprise.

Pure: the standard library, ``validation``, ``offsets`` and ``errors`` only. The application
layer turns ledger records and checkpoint state into the small input classes below.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from types import MappingProxyType

from .errors import PipelineError
from .offsets import PartitionKey, flatten, format_offsets, parse_offsets, unflatten
from .validation import InvalidValueError, WindowSpec

__all__ = [
    "EARLIEST",
    "BatchFacts",
    "CheckpointBatch",
    "CheckpointFacts",
    "FlatOffsets",
    "InconsistentInputsError",
    "LateRecords",
    "LedgerAheadError",
    "NoCommittedBatchError",
    "OffsetsOutOfRetentionError",
    "PartitionPlan",
    "PartitionScan",
    "PlanningError",
    "RestartPlan",
    "RetentionLoss",
    "Scan",
    "TighteningSummary",
    "UnknownWatermarkError",
    "check_retention",
    "count_late_records",
    "earliest_open_event_ms",
    "flat_offsets",
    "last_written_window_end_ms",
    "late_event_threshold_ms",
    "plan_restart",
    "replay_filter_bounds",
    "tighten",
]

# (topic, partition) -> offset, in the flat form of ``offsets.flatten``.
FlatOffsets = Mapping[PartitionKey, int]
# Kafka's startingOffsets code for "the earliest offset the broker still has".
EARLIEST = -2
# For one partition and a half-open offset range [start, end): its records, in offset order,
# as (offset, event time in ms floored, or None for a malformed record).
Scan = Callable[[PartitionKey, int, int], Iterable[tuple[int, int | None]]]


class PlanningError(PipelineError):
    """The planner cannot produce a restart it can vouch for; the message says why."""


class NoCommittedBatchError(PlanningError):
    """The old checkpoint has no committed batch, so there is nothing to upgrade from."""


class LedgerAheadError(PlanningError):
    """The ledger records batches the checkpoint never committed: they belong together no more."""


class UnknownWatermarkError(PlanningError):
    """Neither the checkpoint nor the ledger holds W for the last committed batch."""


class InconsistentInputsError(PlanningError):
    """The facts contradict each other (offsets going backwards, two versions of a batch)."""


@dataclass(frozen=True, slots=True)
class RetentionLoss:
    """Records a restart needs that the broker has already deleted."""

    partition: PartitionKey
    needed_offset: int
    earliest_available: int

    @property
    def lost_records(self) -> int:
        return self.earliest_available - self.needed_offset

    def describe(self) -> str:
        topic, number = self.partition
        return (
            f"topic {topic} partition {number} needs offset {self.needed_offset}, the earliest "
            f"available is {self.earliest_available} ({self.lost_records} records lost)"
        )

    def to_json(self) -> dict[str, object]:
        topic, number = self.partition
        return {
            "topic": topic,
            "partition": number,
            "needed_offset": self.needed_offset,
            "earliest_available": self.earliest_available,
            "lost_records": self.lost_records,
        }


class OffsetsOutOfRetentionError(PlanningError):
    """Restart offsets below the broker's earliest available offsets: data already deleted."""

    def __init__(self, losses: Iterable[RetentionLoss]) -> None:
        self.losses = tuple(losses)
        total = sum(loss.lost_records for loss in self.losses)
        super().__init__(
            "the restart needs records the broker has already deleted (retention): "
            + "; ".join(loss.describe() for loss in self.losses)
            + f". They are {total} records from the first batch that can feed a window still "
            "open on; deleted records cannot be read, so which of them fed open windows is "
            "unknown. Accept the loss (--accept-data-loss) to restart at the earliest "
            "available offsets instead"
        )


# -- Inputs ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchFacts:
    """What the ledger recorded about one committed batch of the old generation.

    A batch the ledger knows nothing about is simply not given (or is named in the gap
    markers): that is "unknown", which is not the same as both event times being None,
    "the batch had no valid event" (a no-data batch, or only malformed records).
    """

    batch_id: int
    start_offsets: FlatOffsets | None  # None: the query's first batch, or not recorded
    end_offsets: FlatOffsets
    watermark_ms: int  # batchWatermarkMs: the watermark this batch ran with
    min_event_time_ms: int | None  # over valid events, floored to the millisecond
    max_event_time_ms: int | None  # over valid events, rounded up to the millisecond

    def __post_init__(self) -> None:
        if (self.min_event_time_ms is None) != (self.max_event_time_ms is None):
            raise InconsistentInputsError(
                f"ledger batch {self.batch_id} has only one of its min and max event times"
            )
        if (
            self.min_event_time_ms is not None
            and self.max_event_time_ms is not None
            and self.min_event_time_ms > self.max_event_time_ms
        ):
            raise InconsistentInputsError(
                f"ledger batch {self.batch_id} has min event time {self.min_event_time_ms} "
                f"after its max {self.max_event_time_ms}"
            )


@dataclass(frozen=True, slots=True)
class CheckpointBatch:
    """One retained ``offsets/<k>`` file of a committed batch."""

    batch_id: int
    end_offsets: FlatOffsets
    watermark_ms: int  # batchWatermarkMs


@dataclass(frozen=True, slots=True)
class CheckpointFacts:
    """What the old checkpoint says: the authority on what committed.

    ``batches`` are the retained ``offsets/<k>`` files of committed batches (Spark keeps the
    last hundred or so); entries above the last commit are ignored, since they did not commit.
    """

    last_committed_batch: int | None
    batches: tuple[CheckpointBatch, ...] = ()
    next_watermark_ms: int | None = None  # nextBatchWatermarkMs of commits/N, if known

    @property
    def watermark_ms(self) -> int | None:
        """W from ``offsets/N``, N the last committed batch; None when that file is gone."""
        for batch in self.batches:
            if batch.batch_id == self.last_committed_batch:
                return batch.watermark_ms
        return None


@lru_cache(maxsize=256)
def flat_offsets(text: str) -> FlatOffsets:
    """Offsets JSON text in the planner's flat form, read-only; for building BatchFacts.

    Cached, because a batch's start offsets are the text of the batch before's end, and
    quick on well-formed text, since a long ledger holds two texts per batch. Anything else
    goes through ``offsets.parse_offsets``, whose errors explain the expected form.
    """
    quick = _well_formed_flat(text)
    return MappingProxyType(quick if quick is not None else flatten(parse_offsets(text)))


def _well_formed_flat(text: str) -> dict[PartitionKey, int] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if type(value) is not dict:
        return None
    flat: dict[PartitionKey, int] = {}
    for topic, partitions in value.items():
        if type(partitions) is not dict:
            return None
        for partition, offset in partitions.items():
            # type() rather than isinstance(): JSON true is no offset.
            if type(offset) is not int or not (partition.isdecimal() and partition.isascii()):
                return None
            flat[(topic, int(partition))] = offset
    return flat


# -- Outputs -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """Where one partition restarts, and why."""

    partition: PartitionKey
    restart_offset: int  # EARLIEST when no one recorded where the old query started it
    end_offset: int  # where the old generation's last committed batch ended
    reason: str

    @property
    def records_to_replay(self) -> int | None:
        """Offsets between the restart and the old end; None until EARLIEST is resolved."""
        if self.restart_offset == EARLIEST:
            return None
        return max(0, self.end_offset - self.restart_offset)

    def to_json(self) -> dict[str, object]:
        topic, number = self.partition
        return {
            "topic": topic,
            "partition": number,
            "restart_offset": self.restart_offset,
            "end_offset": self.end_offset,
            "records_to_replay": self.records_to_replay,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class PartitionScan:
    """What a scan of one partition's batch-level replay range found."""

    partition: PartitionKey
    batch_level_offset: int
    tightened_offset: int
    end_offset: int
    scanned_records: int  # records in [batch_level_offset, end_offset)
    malformed_records: int
    replayed_records: int  # records in [tightened_offset, end_offset)
    feeding_records: int | None  # records whose event time is >= T_min; None: not counted

    def to_json(self) -> dict[str, object]:
        topic, number = self.partition
        return {
            "topic": topic,
            "partition": number,
            "batch_level_offset": self.batch_level_offset,
            "tightened_offset": self.tightened_offset,
            "end_offset": self.end_offset,
            "scanned_records": self.scanned_records,
            "malformed_records": self.malformed_records,
            "replayed_records": self.replayed_records,
            "feeding_records": self.feeding_records,
        }


@dataclass(frozen=True, slots=True)
class TighteningSummary:
    """Replay amplification before and after the per-partition scan."""

    partitions: tuple[PartitionScan, ...]

    @property
    def batch_level_records(self) -> int:
        return sum(scan.scanned_records for scan in self.partitions)

    @property
    def replayed_records(self) -> int:
        return sum(scan.replayed_records for scan in self.partitions)

    @property
    def feeding_records(self) -> int | None:
        counts = [scan.feeding_records for scan in self.partitions]
        return None if None in counts else sum(count or 0 for count in counts)

    @property
    def amplification(self) -> float | None:
        """Replayed records / records that truly feed open windows (1.0 is the minimum)."""
        return _ratio(self.replayed_records, self.feeding_records)

    @property
    def batch_level_amplification(self) -> float | None:
        return _ratio(self.batch_level_records, self.feeding_records)

    def to_json(self) -> dict[str, object]:
        return {
            "batch_level_records": self.batch_level_records,
            "replayed_records": self.replayed_records,
            "feeding_records": self.feeding_records,
            "amplification": self.amplification,
            "batch_level_amplification": self.batch_level_amplification,
            "partitions": [scan.to_json() for scan in self.partitions],
        }


def _ratio(numerator: int, denominator: int | None) -> float | None:
    if denominator is None or denominator == 0:
        return None
    return numerator / denominator


@dataclass(frozen=True, slots=True)
class RestartPlan:
    """Where a new generation restarts, with the reasons, ready for JSON and for sentences."""

    window: WindowSpec
    last_committed_batch: int
    watermark_ms: int  # W
    earliest_open_event_ms: int  # T_min
    restart_batch: int | None  # the first batch that can feed an open window; None: none
    partitions: tuple[PartitionPlan, ...]  # canonical order
    notes: tuple[str, ...] = ()
    data_loss: tuple[RetentionLoss, ...] = ()
    tightening: TighteningSummary | None = None

    @property
    def restart_offsets(self) -> dict[PartitionKey, int]:
        return {plan.partition: plan.restart_offset for plan in self.partitions}

    @property
    def end_offsets(self) -> dict[PartitionKey, int]:
        return {plan.partition: plan.end_offset for plan in self.partitions}

    @property
    def reasons(self) -> dict[PartitionKey, str]:
        return {plan.partition: plan.reason for plan in self.partitions}

    @property
    def records_to_replay(self) -> int | None:
        """The replay estimate in offsets; None while a partition restarts at EARLIEST."""
        counts = [plan.records_to_replay for plan in self.partitions]
        return None if None in counts else sum(count or 0 for count in counts)

    @property
    def starting_offsets(self) -> str:
        """The canonical offsets text for Spark's ``startingOffsets``."""
        return format_offsets(unflatten(self.restart_offsets))

    def to_json(self) -> dict[str, object]:
        return {
            "last_committed_batch": self.last_committed_batch,
            "watermark_ms": self.watermark_ms,
            "replay_after_ms": self.watermark_ms,
            "replay_filter": f"window.end > {self.watermark_ms}",
            "window": {
                "duration_ms": self.window.duration_ms,
                "slide_ms": self.window.slide_ms,
                "watermark_delay_ms": self.window.watermark_delay_ms,
            },
            "earliest_open_event_ms": self.earliest_open_event_ms,
            "restart_batch": self.restart_batch,
            "restart_offsets": self.starting_offsets,
            "end_offsets": format_offsets(unflatten(self.end_offsets)),
            "records_to_replay": self.records_to_replay,
            "partitions": [plan.to_json() for plan in self.partitions],
            "notes": list(self.notes),
            "data_loss": [loss.to_json() for loss in self.data_loss],
            "tightening": None if self.tightening is None else self.tightening.to_json(),
        }

    def explain(self) -> list[str]:
        """The plan as sentences, for the human output of ``upgrade plan``."""
        lines = [
            f"The old generation's last committed batch is {self.last_committed_batch}; it ran "
            f"with watermark W = {_when(self.watermark_ms)}, so it wrote every window ending "
            f"at or before W.",
            f"Windows ending after W ({_describe_window(self.window)}) were still open and "
            f"must be rebuilt: they hold events from {_when(self.earliest_open_event_ms)} on.",
        ]
        if self.restart_batch is None:
            lines.append("No committed batch can feed an open window: nothing to rebuild.")
        else:
            lines.append(
                f"Batch {self.restart_batch} is the first that can feed an open window; the "
                "replay starts there and drops every window ending at or before W."
            )
        for plan in self.partitions:
            topic, number = plan.partition
            offset = "earliest" if plan.restart_offset == EARLIEST else str(plan.restart_offset)
            lines.append(f"{topic} partition {number} restarts at {offset}: {plan.reason}.")
        total = self.records_to_replay
        lines.append(
            "Records to replay: unknown until the broker's earliest offsets are known."
            if total is None
            else f"Records to replay: {total}."
        )
        if self.tightening is not None and self.tightening.amplification is not None:
            lines.append(
                f"Replayed records / records that feed open windows: "
                f"{self.tightening.amplification:.3f} (batch level: "
                f"{self.tightening.batch_level_amplification or 0.0:.3f})."
            )
        lines.extend(f"Note: {note}." for note in self.notes)
        return lines


# -- The arithmetic ----------------------------------------------------------------------


def earliest_open_event_ms(watermark_ms: int, window: WindowSpec) -> int:
    """T_min: the smallest event time whose latest window ends after ``watermark_ms``.

    Every event at or after T_min has at least one window ending after W; every event before
    it has none. Floor division keeps this right for negative times.
    """
    size, slide = window.duration_ms, window.slide_ms
    if size <= 0 or slide <= 0 or slide > size:
        # With a slide longer than the window, an event can fall between windows, and the
        # latest window start would not contain it.
        raise InvalidValueError(
            f"window of {size} ms sliding every {slide} ms: both must be positive and the "
            "slide no longer than the window"
        )
    return ((watermark_ms - size) // slide + 1) * slide


def last_written_window_end_ms(watermark_ms: int, window: WindowSpec) -> int:
    """E: the end of the latest window the old generation wrote, the largest end <= W.

    When the window spec changes, the generations split in event time at E: every event
    before E lies in a written window (windows cover the whole time line when the slide is
    no longer than the window), and no written window holds an event at or after E. Windows
    end at ``k * slide + size``, which is a multiple of the slide only when the size is, so
    E is not simply the last slide boundary before W. T_min <= E, so a restart planned for
    T_min reads every event from E on.
    """
    earliest_open_event_ms(watermark_ms, window)  # the same checks on the window
    size, slide = window.duration_ms, window.slide_ms
    return (watermark_ms - size) // slide * slide + size


def replay_filter_bounds(
    watermark_ms: int, old_window: WindowSpec, window_changed: bool, event_floor_ms: int | None
) -> tuple[int | None, int | None]:
    """The new generation's replay filter: (replay_after_ms, replay_from_event_ms).

    Same window: drop the (event, window) pairs of windows ending at or before W, which
    earlier generations wrote. New window: the grids no longer line up, so split in event
    time where the written windows end (T_min for tumbling windows): every event before it
    was counted in a written window, none after it. An event-time floor of an earlier
    window change is carried on either way: the events before it belong to generations
    before the old one.
    """
    if not window_changed:
        return watermark_ms, event_floor_ms
    split = last_written_window_end_ms(watermark_ms, old_window)
    return None, split if event_floor_ms is None else max(split, event_floor_ms)


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
            f"the old generation's last watermark is {_when(watermark)}, but it started from a "
            f"plan that left every window ending at or before {_when(written_through_ms)} to "
            f"the generation before it, which wrote them: W is {_when(written_through_ms)}"
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
            f"no committed batch can feed a window ending after W={_when(watermark)}: none "
            f"of batches 0-{last} holds an event at or after {_when(t_min)}; restarting at "
            f"the end of batch {last}, nothing to rebuild"
        )
        plans = tuple(
            PartitionPlan(key, offset, offset, why) for key, offset in sorted(final_end.items())
        )
        return RestartPlan(window, last, watermark, t_min, None, plans, tuple(notes))

    plans_list: list[PartitionPlan] = []
    for key in sorted(partitions.keys() | final_end.keys()):
        end_offset = final_end.get(key, partitions.get(key, 0))
        if key in restart:
            offset, reason = restart[key]
        else:
            offset, reason = _new_partition(key, first_seen.get(key, last), initial, feeding)
        plans_list.append(PartitionPlan(key, offset, end_offset, reason))
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
        f"batch {batch_id} is the first whose events (max {_when(latest)}) can fall in a window "
        f"ending after W={_when(watermark)}",
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
        else f" (the watermark after it allows events up to {_when(next_watermark + delay)})"
    )
    return _Feeding(
        batch_id,
        f"{why_unknown}, so its events are unknown and may fall in a window ending after "
        f"W={_when(watermark)}{bound}; it is treated as the first batch that can",
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
        notes.append(f"the ledger has gap markers for batches {_ranges(unknown.gap)}")
    if unknown.missing:
        notes.append(f"batches {_ranges(unknown.missing)} are missing from the ledger")
    if unknown.behind:
        top = "has no batch" if ledger_top < 0 else f"ends at batch {ledger_top}"
        notes.append(
            f"the ledger is behind the checkpoint: it {top}, the checkpoint's last commit is "
            f"{last} (batches {_ranges(unknown.behind)} not recorded)"
        )
    if unknown.bounded:
        notes.append(
            f"the events of unknown batches {_ranges(unknown.bounded)} cannot reach an open "
            f"window: the watermark after each bounds them below {_when(t_min)}"
        )
    if unknown.gap or unknown.missing or unknown.behind:
        notes.append(
            "unknown batches are treated as possibly feeding open windows, with offsets from "
            "the checkpoint's offsets/ files where the ledger has none; replaying more is "
            "safe because the replay filter drops windows already written"
        )
    return notes


def _ranges(batch_ids: list[int]) -> str:
    """Ascending ids as ranges: ``3-5, 9`` for [3, 4, 5, 9]."""
    parts: list[str] = []
    first = previous = batch_ids[0]
    for batch_id in [*batch_ids[1:], None]:
        if batch_id is not None and batch_id == previous + 1:
            previous = batch_id
            continue
        parts.append(str(first) if first == previous else f"{first}-{previous}")
        if batch_id is not None:
            first = previous = batch_id
    return ", ".join(parts)


# -- Retention ---------------------------------------------------------------------------


def check_retention(
    plan: RestartPlan,
    earliest_available: FlatOffsets,
    *,
    accept_data_loss: bool = False,
) -> RestartPlan:
    """Check the restart offsets against the broker's earliest available offsets.

    EARLIEST is resolved to the broker's earliest offset. An offset below the earliest is
    refused with OffsetsOutOfRetentionError unless ``accept_data_loss``: then the partition
    moves up to the earliest available offset and its reason and ``data_loss`` say so.

    It runs before ``tighten`` on purpose. Tightening reads each record's event time, and a
    deleted record cannot be read: whether it fed an open window is unknown, so the
    batch-level restart is the most the planner can vouch for, and anything deleted after
    it counts as lost.
    """
    unknown = [
        each.partition for each in plan.partitions if each.partition not in earliest_available
    ]
    if unknown:
        listing = ", ".join(f"{topic} partition {number}" for topic, number in unknown)
        raise InconsistentInputsError(
            f"the broker reports no earliest offset for {listing}, which the plan restarts; "
            "is the topic still there?"
        )
    losses: list[RetentionLoss] = []
    partitions: list[PartitionPlan] = []
    notes = list(plan.notes)
    for each in plan.partitions:
        earliest = earliest_available[each.partition]
        if each.restart_offset == EARLIEST:
            partitions.append(
                replace(
                    each,
                    restart_offset=earliest,
                    reason=f"{each.reason}; the broker's earliest available offset is {earliest}",
                )
            )
            notes.append(
                f"{each.partition[0]} partition {each.partition[1]} restarts at the broker's "
                "earliest offset; records retention deleted since the old query started it "
                "cannot be counted"
            )
        elif each.restart_offset < earliest:
            loss = RetentionLoss(each.partition, each.restart_offset, earliest)
            losses.append(loss)
            partitions.append(
                replace(
                    each,
                    restart_offset=earliest,
                    reason=f"{each.reason}; moved up to the earliest available offset "
                    f"{earliest}: offsets {each.restart_offset}-{earliest - 1} were deleted "
                    f"by retention, {loss.lost_records} records lost (accepted)",
                )
            )
        else:
            partitions.append(each)
    if losses and not accept_data_loss:
        raise OffsetsOutOfRetentionError(losses)
    if losses:
        total = sum(loss.lost_records for loss in losses)
        notes.append(f"data loss accepted: {total} records deleted by retention are not replayed")
    return replace(
        plan,
        partitions=tuple(partitions),
        notes=tuple(notes),
        data_loss=plan.data_loss + tuple(losses),
    )


# -- Tightening --------------------------------------------------------------------------


def tighten(plan: RestartPlan, scan: Scan, *, count_feeding: bool = True) -> RestartPlan:
    """Move each partition's restart up to its first record that can feed an open window.

    ``scan(partition, start, end)`` yields the partition's records in [start, end), in
    offset order, as (offset, event time in ms floored, or None when malformed). A malformed
    record never feeds a window. Without ``count_feeding`` each scan stops at the first
    feeding record, which is cheaper but leaves the amplification unknown.
    """
    t_min = plan.earliest_open_event_ms
    partitions: list[PartitionPlan] = []
    scans: list[PartitionScan] = []
    for each in plan.partitions:
        start, end = each.restart_offset, each.end_offset
        if start == EARLIEST:
            raise PlanningError(
                f"{each.partition[0]} partition {each.partition[1]} restarts at earliest; "
                "resolve it with the broker's earliest offsets (check_retention) before "
                "scanning"
            )
        first, scanned, malformed, replayed, feeding = _scan_partition(
            each.partition, start, end, t_min, scan, count_feeding=count_feeding
        )
        tightened = end if first is None else first
        tightened = max(tightened, start)
        if first is None:
            reason = (
                f"no record in offsets {start}-{end - 1} has an event time at or after "
                f"{_when(t_min)} ({scanned} records scanned, {malformed} malformed), so "
                f"nothing of this partition needs rebuilding: it restarts at its end offset "
                f"{end} (batch level: {each.reason})"
            )
        else:
            reason = (
                f"offset {first} holds the first record at or after offset {start} whose "
                f"event time can fall in a window ending after W (batch level: {each.reason})"
            )
        if start >= end:
            reason = each.reason
        partitions.append(replace(each, restart_offset=tightened, reason=reason))
        scans.append(
            PartitionScan(
                partition=each.partition,
                batch_level_offset=start,
                tightened_offset=tightened,
                end_offset=end,
                scanned_records=scanned,
                malformed_records=malformed,
                replayed_records=replayed if count_feeding else max(0, end - tightened),
                feeding_records=feeding,
            )
        )
    return replace(plan, partitions=tuple(partitions), tightening=TighteningSummary(tuple(scans)))


def _in_order(
    scan: Scan, partition: PartitionKey, start: int, end: int
) -> Iterator[tuple[int, int | None]]:
    """The records ``scan`` returns for ``[start, end)``, checked to ascend within it: a
    scan that skips back or strays out would make every count after it wrong."""
    previous = start - 1
    for offset, event_time in scan(partition, start, end):
        if not previous < offset < end:
            raise InconsistentInputsError(
                f"the scan of {partition[0]} partition {partition[1]} over [{start}, {end}) "
                f"returned offset {offset} after {previous}: offsets must ascend within range"
            )
        previous = offset
        yield offset, event_time


def _scan_partition(
    partition: PartitionKey,
    start: int,
    end: int,
    t_min: int,
    scan: Scan,
    *,
    count_feeding: bool,
) -> tuple[int | None, int, int, int, int | None]:
    """(first feeding offset, scanned, malformed, replayed from the first, feeding)."""
    if start >= end:
        return None, 0, 0, 0, 0
    first: int | None = None
    scanned = malformed = replayed = feeding = 0
    for offset, event_time in _in_order(scan, partition, start, end):
        scanned += 1
        if event_time is None:
            malformed += 1
        elif event_time >= t_min:
            feeding += 1
            if first is None:
                first = offset
                if not count_feeding:
                    return first, scanned, malformed, 0, None
        if first is not None:
            replayed += 1
    return first, scanned, malformed, replayed, feeding if count_feeding else None


# -- Late records ------------------------------------------------------------------------


def late_event_threshold_ms(
    window: WindowSpec, replay_after_ms: int | None, replay_from_event_ms: int | None
) -> int | None:
    """The event time before which the new generation's replay filter drops a record whole.

    ``window.end > replay_after_ms`` drops an event from every window exactly when its
    latest window ends at or before ``replay_after_ms``: when it is before T_min of that
    watermark (for sliding windows, an event with one window still open counts there).
    ``event_time >= replay_from_event_ms`` drops it before any window. None: no filter.
    """
    bounds = []
    if replay_after_ms is not None:
        bounds.append(earliest_open_event_ms(replay_after_ms, window))
    if replay_from_event_ms is not None:
        bounds.append(replay_from_event_ms)
    return max(bounds) if bounds else None


@dataclass(frozen=True, slots=True)
class LateRecords:
    """The records waiting after the old generation's end that the new one drops as late."""

    before_event_ms: int | None  # late: an event time before this; None: no filter, none late
    by_window_end: bool  # the bound is T_min of W (the window filter), not an event-time split
    start_offsets: FlatOffsets  # where each partition's scan began: the old generation's end
    end_offsets: FlatOffsets  # where it stopped: the latest offsets when the plan was made
    scanned_records: int
    malformed_records: int  # never late: they go to the quarantine
    late_records: int

    def to_json(self) -> dict[str, object]:
        return {
            "before_event_ms": self.before_event_ms,
            "start_offsets": format_offsets(unflatten(self.start_offsets)),
            "end_offsets": format_offsets(unflatten(self.end_offsets)),
            "scanned_records": self.scanned_records,
            "malformed_records": self.malformed_records,
            "late_records": self.late_records,
        }

    def explain(self) -> str:
        """One sentence for the human output of ``upgrade plan``."""
        if self.before_event_ms is None:
            return "Late records: none; the new generation filters nothing out."
        cut = _when(self.before_event_ms)
        rule = (
            "every window they fall in ended at or before W, so the new generation drops "
            "them, as a run that never stopped would have"
            if self.by_window_end
            else "the generations split there, so the new generation drops them, and the "
            "old one never read them"
        )
        later = f"Records that arrive later with event times before {cut} are dropped as well."
        if self.scanned_records == 0:
            return (
                f"Late records: none waiting yet (no record after the old generation's end "
                f"offsets). {later}"
            )
        waiting = (
            f"the {self.scanned_records} records waiting after the old generation's end "
            f"offsets (up to {format_offsets(unflatten(self.end_offsets))})"
        )
        if self.late_records == 0:
            return f"Late records: none of {waiting} has an event time before {cut}. {later}"
        return (
            f"Late records: {self.late_records} of {waiting} have event times before "
            f"{cut}: {rule}. {later}"
        )


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
    is never late; it goes to the quarantine.
    """
    threshold = late_event_threshold_ms(window, replay_after_ms, replay_from_event_ms)
    by_window_end = replay_after_ms is not None and threshold == earliest_open_event_ms(
        replay_after_ms, window
    )
    scanned = malformed = late = 0
    for partition, (start, end) in sorted(ranges.items()):
        if start < 0 or end < 0:
            raise PlanningError(
                f"{partition[0]} partition {partition[1]}: the range [{start}, {end}) to scan "
                "for late records needs resolved offsets (earliest and latest from the broker)"
            )
        if threshold is None or start >= end:
            continue
        for _offset, event_time in _in_order(scan, partition, start, end):
            scanned += 1
            if event_time is None:
                malformed += 1
            elif event_time < threshold:
                late += 1
    return LateRecords(
        before_event_ms=threshold,
        by_window_end=by_window_end,
        start_offsets=MappingProxyType({key: start for key, (start, _) in ranges.items()}),
        end_offsets=MappingProxyType({key: end for key, (_, end) in ranges.items()}),
        scanned_records=scanned,
        malformed_records=malformed,
        late_records=late,
    )


# -- Words -------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _when(ms: int) -> str:
    """An event time as UTC ISO-8601, with milliseconds only when it has some."""
    try:
        moment = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} ms"
    text = moment.replace(tzinfo=None).isoformat(timespec="seconds")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return text + "Z"


def _describe_window(window: WindowSpec) -> str:
    size = _duration(window.duration_ms)
    delay = _duration(window.watermark_delay_ms)
    if window.is_tumbling:
        return f"tumbling windows of {size}, watermark delay {delay}"
    return f"windows of {size} sliding every {_duration(window.slide_ms)}, watermark delay {delay}"


def _duration(ms: int) -> str:
    for unit, length in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000)):
        if ms and ms % length == 0:
            count = ms // length
            return f"{count} {unit}{'s' if count != 1 else ''}"
    if ms and ms % 1000 == 0:
        return f"{ms // 1000} s"
    return f"{ms} ms"
