"""What the picture of a plan shows, decided from the plan and the ledger alone.

For each partition that matters, offsets run along one axis and event time along the other:
each committed batch is a box (its offsets in that partition, the event times the ledger
recorded for it), W and T_min are lines across, the windows beside it are written or still
open, and the restart offset, the records to replay and the late records are marked. The
renderer (``plot``) draws exactly this record, so what the picture says is tested here,
without a plotting library.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark_kafka_upgrade.model.history import BatchFacts
from pyspark_kafka_upgrade.model.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade.values.offsets import PartitionKey, format_offsets, unflatten
from pyspark_kafka_upgrade.values.windows import earliest_open_event_ms
from pyspark_kafka_upgrade.values.words import describe_window, watermark_text, when

# With more partitions than this, the picture draws the ones that matter most and a summary.
PANELS_WHOLE = 4
PANELS_SUMMARISED = 3
# A panel draws at most this many boxes; beyond, neighbouring batches share one.
MAX_BOXES = 40
# Written batches drawn before the first one the replay reads, for context.
CONTEXT_BATCHES = 2
MAX_WINDOWS = 60


@dataclass(frozen=True, slots=True)
class BatchBox:
    """One committed batch (or a run of neighbouring ones) in one partition."""

    first_batch: int
    last_batch: int
    start_offset: int
    end_offset: int
    min_event_ms: int | None  # None: no valid event (or, merged, none recorded)
    max_event_ms: int | None
    can_feed_open: bool  # its latest event time is at or after T_min

    @property
    def label(self) -> str:
        if self.first_batch == self.last_batch:
            return f"batch {self.first_batch}"
        return f"batches {self.first_batch}-{self.last_batch}"


@dataclass(frozen=True, slots=True)
class PartitionPanel:
    """One partition's picture: its restart as the plan has it, and its batches."""

    restart: PartitionRestart
    boxes: tuple[BatchBox, ...]

    @property
    def partition(self) -> int:
        return self.restart.partition

    @property
    def restart_offset(self) -> int | None:
        """None: not read again; negative: a position (-2, -1)."""
        return self.restart.restart_offset

    @property
    def old_end_offset(self) -> int | None:
        return self.restart.old_end_offset

    @property
    def late_records(self) -> int | None:
        """Waiting after the old end, dropped whole; None: not counted."""
        waiting = self.restart.waiting_scan
        return None if waiting is None else waiting.late_records

    @property
    def waiting_end_offset(self) -> int | None:
        """Where the waiting scan stopped: the latest offset when the plan was made."""
        waiting = self.restart.waiting_scan
        return None if waiting is None else waiting.end_offset

    @property
    def title(self) -> str:
        restart = self.restart
        where = (
            "not read again"
            if restart.restart_offset is None
            else f"restarts at {_offset(restart.restart_offset)}"
        )
        end = "" if restart.old_end_offset is None else f", old end {restart.old_end_offset}"
        replay = restart.records_to_replay
        replayed = "" if replay is None else f", {replay} to replay"
        name = f"{restart.topic} partition {restart.partition}"
        return f"{name}: {where}{end}{replayed} ({restart.kind})"


@dataclass(frozen=True, slots=True)
class WindowBar:
    """One window of the old generation's spec beside the panels, by its event times."""

    start_ms: int
    end_ms: int
    written: bool  # its end is at or before W: the old generation wrote it
    lane: int  # sliding windows overlap; each lane holds windows that do not


@dataclass(frozen=True, slots=True)
class SummaryBar:
    """One partition in the summary of all of them: what it replays."""

    topic: str
    partition: int
    records_to_replay: int | None
    drawn: bool  # it has a panel of its own


@dataclass(frozen=True, slots=True)
class PlanPicture:
    """Everything the picture of one plan shows, in the order it is drawn."""

    title: str
    lines: tuple[str, ...]  # under the title: W, T_min, the filter, the totals
    watermark_ms: int  # W
    earliest_open_ms: int  # T_min: events from here on can feed an open window
    late_before_ms: int | None  # records waiting before this event time are dropped whole
    # The window spec changes: the generations split in event time at E, the new one counts
    # the events from E on, and the old spec's open windows are not carried over.
    event_split_ms: int | None
    event_range: tuple[int, int]  # the event-time axis, ms
    panels: tuple[PartitionPanel, ...]
    windows: tuple[WindowBar, ...]
    lanes: int
    summary: tuple[SummaryBar, ...]  # every subscribed partition, when not all have a panel
    summary_text: str
    metadata: Mapping[str, str]  # written into the image: the plan's offsets and W

    @property
    def summarised(self) -> bool:
        return bool(self.summary)


def plan_picture(
    plan: UpgradePlan,
    batches: Sequence[BatchFacts],
    initial_offsets: Mapping[PartitionKey, int] | None = None,
) -> PlanPicture:
    """The picture of ``plan``, with the old generation's ``batches`` from the ledger (none
    when the ledger no longer has them: the panels then show the offsets alone)."""
    t_min = earliest_open_event_ms(plan.watermark_ms, plan.window)
    ordered = sorted(batches, key=lambda batch: batch.batch_id)
    chosen = _partitions_that_matter(plan.partitions)
    panels = tuple(
        PartitionPanel(p, _boxes(p, ordered, initial_offsets or {}, t_min)) for p in chosen
    )
    low, high = _event_range(plan, t_min, panels)
    windows, lanes = _windows(plan, low, high)
    subscribed = [p for p in plan.partitions if p.subscribed]
    summarised = len(chosen) < len(plan.partitions)
    drawn = {(p.topic, p.partition) for p in chosen}
    summary = (
        tuple(
            SummaryBar(p.topic, p.partition, p.records_to_replay, p.key in drawn)
            for p in subscribed
        )
        if summarised
        else ()
    )
    return PlanPicture(
        title=(
            f"Upgrade plan of {plan.pipeline!r}: generation {plan.from_generation} -> "
            f"{plan.to_generation}"
        ),
        lines=_lines(plan, t_min, len(batches)),
        watermark_ms=plan.watermark_ms,
        earliest_open_ms=t_min,
        late_before_ms=plan.late_before_event_ms,
        event_split_ms=plan.replay_filter.event_time_from_ms if plan.window_changed else None,
        event_range=(low, high),
        panels=panels,
        windows=windows,
        lanes=lanes,
        summary=summary,
        summary_text=_summary_text(plan, chosen) if summarised else "",
        metadata=_metadata(plan),
    )


def _partitions_that_matter(partitions: Sequence[PartitionRestart]) -> list[PartitionRestart]:
    """All of them when few; else those that lose records, drop late ones or replay most."""
    if len(partitions) <= PANELS_WHOLE:
        return list(partitions)

    def weight(p: PartitionRestart) -> tuple[int, int, int, int]:
        late = 0 if p.waiting_scan is None else p.waiting_scan.late_records
        return (p.lost_records, late, p.records_to_replay or 0, int(p.subscribed))

    ranked = sorted(partitions, key=weight, reverse=True)[:PANELS_SUMMARISED]
    return sorted(ranked, key=lambda p: p.key)


def _boxes(
    restart: PartitionRestart,
    batches: Sequence[BatchFacts],
    initial: Mapping[PartitionKey, int],
    t_min: int,
) -> tuple[BatchBox, ...]:
    """The batches that read this partition, from a little before the restart to the end."""
    key = restart.key
    boxes: list[BatchBox] = []
    previous_end = initial.get(key)
    for batch in batches:
        end = batch.end_offsets.get(key)
        start = previous_end if batch.start_offsets is None else batch.start_offsets.get(key)
        start = previous_end if start is None else start
        previous_end = end if end is not None else previous_end
        if start is None or end is None or end <= start:
            continue
        top = batch.max_event_time_ms
        boxes.append(
            BatchBox(
                first_batch=batch.batch_id,
                last_batch=batch.batch_id,
                start_offset=start,
                end_offset=end,
                min_event_ms=batch.min_event_time_ms,
                max_event_ms=top,
                can_feed_open=top is not None and top >= t_min,
            )
        )
    boundary = restart.restart_offset
    if boundary is not None and boundary >= 0:
        first_read = next(
            (i for i, box in enumerate(boxes) if box.end_offset > boundary), len(boxes)
        )
        boxes = boxes[max(0, first_read - CONTEXT_BATCHES) :]
    return _merged(boxes)


def _merged(boxes: list[BatchBox]) -> tuple[BatchBox, ...]:
    """At most MAX_BOXES boxes: neighbouring batches share one when there are more."""
    if len(boxes) <= MAX_BOXES:
        return tuple(boxes)
    size = math.ceil(len(boxes) / MAX_BOXES)
    merged = []
    for i in range(0, len(boxes), size):
        group = boxes[i : i + size]
        lows = [box.min_event_ms for box in group if box.min_event_ms is not None]
        highs = [box.max_event_ms for box in group if box.max_event_ms is not None]
        merged.append(
            BatchBox(
                first_batch=group[0].first_batch,
                last_batch=group[-1].last_batch,
                start_offset=group[0].start_offset,
                end_offset=group[-1].end_offset,
                min_event_ms=min(lows) if lows else None,
                max_event_ms=max(highs) if highs else None,
                can_feed_open=any(box.can_feed_open for box in group),
            )
        )
    return tuple(merged)


def _event_range(
    plan: UpgradePlan, t_min: int, panels: Sequence[PartitionPanel]
) -> tuple[int, int]:
    """From a written window before T_min to past W: enough to see both sides of the cut.
    A stray event years away widens it by at most a few windows, so W stays readable."""
    size = plan.window.duration_ms
    reach = 4 * size + plan.window.watermark_delay_ms
    boxes = [box for panel in panels for box in panel.boxes]
    latest = max((b.max_event_ms for b in boxes if b.max_event_ms is not None), default=None)
    # Until a batch with events moves it, W is 0: centre on the events read instead of 1970.
    moved = plan.watermark_ms > 0 or latest is None
    centre = plan.watermark_ms if moved else latest or 0
    low = (t_min if moved else centre) - size
    high = max(centre, t_min if moved else centre) + size
    for box in boxes:
        if box.min_event_ms is not None:
            low = min(low, max(box.min_event_ms, centre - reach))
        if box.max_event_ms is not None:
            high = max(high, min(box.max_event_ms, centre + reach))
    margin = max(1, (high - low) // 20)
    return low - margin, high + margin


def _windows(plan: UpgradePlan, low: int, high: int) -> tuple[tuple[WindowBar, ...], int]:
    """The old spec's windows that overlap [low, high]: the ones nearest W when too many."""
    size, slide = plan.window.duration_ms, plan.window.slide_ms
    lanes = math.ceil(size / slide)
    first = (low - size) // slide + 1
    last = high // slide
    starts = [k * slide for k in range(first, last + 1)]
    if len(starts) > MAX_WINDOWS:
        nearest = sorted(starts, key=lambda start: abs(start + size - plan.watermark_ms))
        starts = sorted(nearest[:MAX_WINDOWS])
    bars = tuple(
        WindowBar(
            start_ms=start,
            end_ms=start + size,
            written=start + size <= plan.watermark_ms,
            lane=(start // slide) % lanes,
        )
        for start in starts
    )
    return bars, lanes


def _lines(plan: UpgradePlan, t_min: int, batches: int) -> tuple[str, ...]:
    restart = (
        "no committed batch can feed an open window"
        if plan.restart_batch is None
        else f"batch {plan.restart_batch} is the first that can feed one"
    )
    replay = plan.records_to_replay
    late = plan.late_records
    cut = (
        f"W = {watermark_text(plan.watermark_ms)} (batch {plan.last_committed_batch}): "
        f"windows ending at or before W are written. Open windows hold events from "
        f"T_min = {when(t_min)} on; {restart}."
        if plan.watermark_ms > 0
        else f"W = not yet set (batch {plan.last_committed_batch}): no window was written, "
        f"so every event read can feed an open window; {restart}."
    )
    lines = [
        cut,
        f"{describe_window(plan.window)}. Replay filter: {plan.replay_filter.describe()}. "
        f"Records to replay: {'unknown' if replay is None else replay}; late records "
        f"dropped: {'not counted' if late is None else late}.",
    ]
    if plan.window_changed:
        lines.append(
            "The window spec changes: the new generation counts the events from "
            f"E = {when(plan.replay_filter.event_time_from_ms or 0)} on, in its own windows; "
            "the old spec's open windows are not written by either."
        )
    if batches == 0:
        lines.append("The ledger holds no batch of the old generation: offsets only.")
    return tuple(lines)


def _summary_text(plan: UpgradePlan, chosen: Sequence[PartitionRestart]) -> str:
    counts = sorted(
        p.records_to_replay
        for p in plan.partitions
        if p.subscribed and p.records_to_replay is not None
    )
    rest = len(plan.partitions) - len(chosen)
    spread = f"median {counts[len(counts) // 2]}, max {counts[-1]}" if counts else "none replays"
    kinds: dict[str, int] = {}
    for p in plan.partitions:
        kinds[p.kind.value] = kinds.get(p.kind.value, 0) + 1
    by_kind = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    return (
        f"{len(plan.partitions)} partitions, {rest} not drawn above. Records to replay per "
        f"partition: {spread}. Restarts: {by_kind}."
    )


def _metadata(plan: UpgradePlan) -> dict[str, str]:
    """The plan's offsets, in the image itself, so a picture can be checked against a plan."""
    return {
        "Title": f"upgrade plan {plan.pipeline} {plan.from_generation}->{plan.to_generation}",
        "Description": json.dumps(
            {
                "restart_offsets": plan.starting_offsets,
                "old_end_offsets": format_offsets(unflatten(plan.old_end_offsets)),
                "watermark_ms": plan.watermark_ms,
                "replay_filter": plan.replay_filter.describe(),
            },
            sort_keys=True,
        ),
    }


def _offset(offset: int) -> str:
    return {-2: "earliest", -1: "latest"}.get(offset, str(offset))
