"""What the picture of a plan shows, decided from the plan and the ledger alone.

For each partition that matters, offsets run along one axis and event time along the other:
each committed batch is a box (its offsets in that partition, the event times the ledger
recorded for it), W and T_min are lines across, the windows beside it are written or still
open, and the restart offset, the records to replay and the late records are marked. A
batch with no valid event has no event time: it is a bar in a band of its own under the
event times, not a box. The layout also places every label (``placement``), so that none
covers another or a box. The renderer (``plot``) draws exactly this record, so what the
picture says, and where, is tested here, without a plotting library.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark_kafka_upgrade._core.picture.placement import (
    PAD_POINTS,
    PANEL_POINTS,
    Label,
    Rect,
    Scale,
    Spot,
    Wanted,
    along_line,
    beside_line,
    place,
)
from pyspark_kafka_upgrade._domain.records.history import BatchFacts
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, format_offsets, unflatten
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.windows import earliest_open_event_ms
from pyspark_kafka_upgrade._domain.values.words import describe_window, watermark_text, when

# With more partitions than this, the picture draws the ones that matter most and a summary.
PANELS_WHOLE = 4
PANELS_SUMMARISED = 3
# A panel draws at most this many boxes; beyond, neighbouring batches share one.
MAX_BOXES = 40
# Written batches drawn before the first one the replay reads, for context.
CONTEXT_BATCHES = 2
MAX_WINDOWS = 60
# Boxes up to this many get a label each; beyond, the title and the axis say enough.
LABELLED_BOXES = 12
NO_EVENT = "no valid event"
# Points of a panel's height: the band of batches with no valid event, under the event
# times; and the room kept free above the highest box, for the restart offset's label.
BAND_POINTS = 16.0
HEAD_POINTS = 28.0
BATCH_FONT = 7.0
LINE_FONT = 8.0
# Characters per line of the words under a panel (the figure's width, in its font).
NOTE_WIDTH = 165


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

    @property
    def eventless(self) -> bool:
        """No event time to draw it at: it read malformed records only (or, merged, the
        ledger recorded none)."""
        return self.min_event_ms is None or self.max_event_ms is None


@dataclass(frozen=True, slots=True)
class Frame:
    """The vertical extent every panel shares, in ms of event time.

    From ``low`` to ``high`` the event times; boxes are cut at ``boxes_top``, so the room
    above stays free for labels. Under ``low``, down to ``band_bottom``, the band of batches
    with no valid event, when a panel has one: offsets along it, no time up it.
    """

    low: int
    boxes_top: int
    high: int
    band_bottom: int | None

    @property
    def bottom(self) -> int:
        return self.low if self.band_bottom is None else self.band_bottom


@dataclass(frozen=True, slots=True)
class PartitionPanel:
    """One partition's picture: its restart as the plan has it, its batches, and where each
    of them and each label goes (data coordinates: offsets across, ms up)."""

    restart: PartitionRestart
    boxes: tuple[BatchBox, ...]
    shapes: tuple[Rect, ...]  # one per box: in the event times, or in the band when eventless
    x_limits: tuple[float, float]
    labels: tuple[Label, ...]
    notes: tuple[str, ...]  # lines under the panel: why it restarts there, and so on

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
    frame: Frame  # the event-time axis, the room above the boxes and the band under them
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
    boxes = [_boxes(p, ordered, initial_offsets or {}, t_min) for p in chosen]
    every_box = [box for panel_boxes in boxes for box in panel_boxes]
    frame = _frame(plan, t_min, every_box)
    event_split = plan.replay_filter.event_time_from_ms if plan.window_changed else None
    marks = _Marks(plan.watermark_ms, t_min, event_split)
    panels = tuple(
        _panel(restart, panel_boxes, frame, marks)
        for restart, panel_boxes in zip(chosen, boxes, strict=True)
    )
    low, high = frame.low, frame.high
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
        event_split_ms=event_split,
        event_range=(low, high),
        frame=frame,
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


def _frame(plan: UpgradePlan, t_min: int, boxes: Sequence[BatchBox]) -> Frame:
    """The event times every panel shows, the room above them and the band under them."""
    low, top = _event_range(plan, t_min, boxes)
    banded = any(box.eventless for box in boxes)
    points = PANEL_POINTS[1] - (BAND_POINTS if banded else 0.0)
    # HEAD_POINTS of the event area's points stay above the boxes' top.
    high = low + math.ceil((top - low) * points / (points - HEAD_POINTS))
    per_point = (high - low) / points
    band_bottom = low - math.ceil(BAND_POINTS * per_point) if banded else None
    return Frame(low=low, boxes_top=top, high=high, band_bottom=band_bottom)


def _event_range(plan: UpgradePlan, t_min: int, boxes: Sequence[BatchBox]) -> tuple[int, int]:
    """From a written window before T_min to past W: enough to see both sides of the cut.
    A stray event years away widens it by at most a few windows, so W stays readable."""
    size = plan.window.duration_ms
    reach = 4 * size + plan.window.watermark_delay_ms
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


@dataclass(frozen=True, slots=True)
class _Marks:
    """The lines across every panel: W, T_min and, when the window changes, E."""

    watermark_ms: int
    t_min: int
    event_split_ms: int | None


def _panel(
    restart: PartitionRestart, boxes: tuple[BatchBox, ...], frame: Frame, marks: _Marks
) -> PartitionPanel:
    """One partition's panel: its boxes' shapes, its labels where they fit, its notes."""
    left, right = _offset_range(restart, boxes)
    area = Rect(left, frame.bottom, right, frame.high)
    scale = Scale.of(area)
    shapes = tuple(_shape(box, frame, scale) for box in boxes)
    wanted = _wanted_labels(restart, boxes, shapes, frame, marks, scale, area)
    labels, unplaced = place(wanted, shapes, scale)
    notes = [*textwrap.wrap(f"Why: {restart.reason}", NOTE_WIDTH)]
    if restart.lost_records:
        notes.append(f"Lost to retention: {restart.lost_records}.")
    if unplaced:
        missing = "; ".join(want.text.replace("\n", ", ") for want in unplaced)
        notes += textwrap.wrap(f"No room in the panel for: {missing}.", NOTE_WIDTH)
    return PartitionPanel(restart, boxes, shapes, (left, right), labels, tuple(notes))


def _offset_range(restart: PartitionRestart, boxes: Sequence[BatchBox]) -> tuple[float, float]:
    waiting = restart.waiting_scan
    points = [
        offset
        for offset in (
            restart.restart_offset,
            restart.old_end_offset,
            None if waiting is None else waiting.end_offset,
        )
        if offset is not None and offset >= 0
    ]
    points += [box.start_offset for box in boxes] + [box.end_offset for box in boxes]
    if not points:
        return 0.0, 1.0
    left, right = min(points), max(points)
    margin = max(1.0, (right - left) * 0.04)
    return left - margin, right + margin


def _shape(box: BatchBox, frame: Frame, scale: Scale) -> Rect:
    """A batch with events: its offsets by its event times, cut to the event-time area. A
    batch without: a bar in the band under it, a few points wide at least."""
    if box.eventless:
        assert frame.band_bottom is not None  # a band exists whenever a box is eventless
        inset = 3 * scale.y
        end = max(float(box.end_offset), box.start_offset + 3 * scale.x)
        return Rect(box.start_offset, frame.band_bottom + inset, end, frame.low - inset)
    assert box.min_event_ms is not None and box.max_event_ms is not None
    bottom = min(max(box.min_event_ms, frame.low), frame.boxes_top)
    top = max(min(box.max_event_ms, frame.boxes_top), frame.low)
    # A batch of one event time is still seen.
    return Rect(box.start_offset, bottom, box.end_offset, max(top, bottom + 2 * scale.y))


def _wanted_labels(
    restart: PartitionRestart,
    boxes: Sequence[BatchBox],
    shapes: Sequence[Rect],
    frame: Frame,
    marks: _Marks,
    scale: Scale,
    area: Rect,
) -> list[Wanted]:
    """Every label of a panel, most important first: the first placed get their best spot."""
    times = Rect(area.x0, frame.low, area.x1, frame.high)
    wanted: list[Wanted] = []
    if restart.restart_offset is not None and restart.restart_offset >= 0:
        text = f"restart {restart.restart_offset}\nreplay {restart.records_to_replay or 0}"
        spots = beside_line(restart.restart_offset, times, scale)
        wanted.append(Wanted("restart", text, LINE_FONT, spots, times, bold=True))
    for role, at, text, below in (
        ("W", marks.watermark_ms, f"W {_clock(marks.watermark_ms)}", False),
        ("T_min", marks.t_min, f"T_min {_clock(marks.t_min)}", True),
    ):
        if marks.watermark_ms > 0 and frame.low < at < frame.high:
            spots = along_line(at, times, scale, below_first=below)
            wanted.append(Wanted(role, text, LINE_FONT, spots, times))
    split = marks.event_split_ms
    if split is not None and frame.low < split < frame.high:
        text = f"E {_clock(split)}: new windows from here"
        wanted.append(Wanted("E", text, LINE_FONT, along_line(split, times, scale), times))
    end = restart.old_end_offset
    if end is not None:
        spots = beside_line(end, times, scale, bottom_first=True)
        wanted.append(Wanted("old-end", f"old end {end}", LINE_FONT, spots, times))
    waiting = restart.waiting_scan
    if waiting is not None and end is not None and waiting.end_offset > end:
        late = f"{waiting.late_records} late"
        text = f"{waiting.end_offset - end} waiting: {late}"
        spots = beside_line(waiting.end_offset, times, scale, bottom_first=True, left_first=True)
        wanted.append(Wanted("waiting", text, LINE_FONT, spots, times))
    if len(boxes) > LABELLED_BOXES:
        return wanted
    band = (
        None if frame.band_bottom is None else Rect(area.x0, frame.band_bottom, area.x1, frame.low)
    )
    for box, shape in zip(boxes, shapes, strict=True):
        if box.eventless and band is not None:
            text = f"{box.label}: {NO_EVENT}"
            wanted.append(Wanted("no-event", text, BATCH_FONT, _beside_bar(shape, scale), band))
        elif not box.eventless:
            wanted.append(Wanted("batch", box.label, BATCH_FONT, _around_box(shape, scale), times))
    return wanted


def _around_box(shape: Rect, scale: Scale) -> tuple[Spot, ...]:
    """Over the box, centred, then under it, then over and under at its ends."""
    middle = (shape.x0 + shape.x1) / 2
    # Just clear of the box: a label keeps PAD_POINTS free around it.
    gap = (PAD_POINTS + 0.5) * scale.y
    over, under = shape.y1 + gap, shape.y0 - gap
    return (
        Spot(middle, over, "center", "bottom"),
        Spot(middle, under, "center", "top"),
        Spot(shape.x0, over, "left", "bottom"),
        Spot(shape.x1, over, "right", "bottom"),
        Spot(shape.x0, under, "left", "top"),
        Spot(shape.x1, under, "right", "top"),
    )


def _beside_bar(shape: Rect, scale: Scale) -> tuple[Spot, ...]:
    """In the band, left of the bar, then right of it (the old end is usually right)."""
    middle = (shape.y0 + shape.y1) / 2
    gap = (PAD_POINTS + 1) * scale.x
    return (
        Spot(shape.x0 - gap, middle, "right", "center"),
        Spot(shape.x1 + gap, middle, "left", "center"),
    )


def _clock(ms: int) -> str:
    """An event time on a panel, where the axis gives the day: hours to seconds, UTC."""
    try:
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} ms"
    return moment.strftime("%H:%M:%S")


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
        f"{describe_window(plan.window)}. Replay filter: {plan.replay_filter.explain()}. "
        f"Records to replay: {'unknown' if replay is None else replay}; late records "
        f"dropped: {'not counted' if late is None else late}.",
    ]
    if plan.window_changed:
        split = plan.replay_filter.event_time_from_ms or 0
        shown = ", ".join(_span(start, end) for start, end in _open_at(split, plan.window))
        lines.append(
            "The window spec changes: the new generation counts the events from "
            f"E = {when(split)} on, in its own windows. The old windows open at E ({shown}) "
            "are written by neither generation: a dashboard of the old windows shows a gap "
            "there."
        )
    if batches == 0:
        lines.append("The ledger holds no batch of the old generation: offsets only.")
    return tuple(lines)


def _open_at(split_ms: int, window: WindowSpec) -> list[tuple[int, int]]:
    """The old grid's windows that hold E or start there: neither generation writes them."""
    size, slide = window.duration_ms, window.slide_ms
    first = (split_ms - size) // slide + 1
    return [(k * slide, k * slide + size) for k in range(first, split_ms // slide + 1)]


def _span(start_ms: int, end_ms: int) -> str:
    """``10:30-10:40``; with seconds when a window has them."""
    start, end = _clock(start_ms), _clock(end_ms)
    if start.endswith(":00") and end.endswith(":00"):
        start, end = start[:-3], end[:-3]
    return f"{start}-{end}"


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
