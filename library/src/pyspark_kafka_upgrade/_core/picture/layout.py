"""What the picture of a plan shows, decided from the plan and the ledger alone.

For each partition that matters, offsets run along one axis and event time along the other:
each committed batch is a box (``boxes``: its offsets in that partition, the event times the
ledger recorded for it), W and T_min are lines across, the windows beside it are written or
still open, and the restart offset, the records to replay and the late records are marked. A
batch with no valid event has no event time: it is a bar in a band of its own under the
event times (``frame``), not a box. The layout also places every label (``labels`` wants
them, ``placement`` places them), so that none covers another or a box; ``words`` writes
the lines under the title. The renderer (``plot``) draws exactly this record, so what the
picture says, and where, is tested here, without a plotting library.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark_kafka_upgrade._core.picture.boxes import BatchBox, batch_boxes
from pyspark_kafka_upgrade._core.picture.frame import Frame, box_shape, frame_of
from pyspark_kafka_upgrade._core.picture.labels import Marks, wanted_labels
from pyspark_kafka_upgrade._core.picture.placement import Label, Rect, Scale, place
from pyspark_kafka_upgrade._core.picture.words import metadata_of, plan_lines, summary_text
from pyspark_kafka_upgrade._domain.records.history import BatchFacts
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.windows import earliest_open_event_ms

# With more partitions than this, the picture draws the ones that matter most and a summary.
PANELS_WHOLE = 4
PANELS_SUMMARISED = 3
MAX_WINDOWS = 60
# Characters per line of the words under a panel (the figure's width, in its font).
NOTE_WIDTH = 165


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
    boxes = [batch_boxes(p, ordered, initial_offsets or {}, t_min) for p in chosen]
    every_box = [box for panel_boxes in boxes for box in panel_boxes]
    frame = frame_of(plan, t_min, every_box)
    event_split = plan.replay_filter.event_time_from_ms if plan.window_changed else None
    marks = Marks(plan.watermark_ms, t_min, event_split)
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
        lines=plan_lines(plan, t_min, len(batches)),
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
        summary_text=summary_text(plan, chosen) if summarised else "",
        metadata=metadata_of(plan),
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


def _panel(
    restart: PartitionRestart, boxes: tuple[BatchBox, ...], frame: Frame, marks: Marks
) -> PartitionPanel:
    """One partition's panel: its boxes' shapes, its labels where they fit, its notes."""
    left, right = _offset_range(restart, boxes)
    area = Rect(left, frame.bottom, right, frame.high)
    scale = Scale.of(area)
    shapes = tuple(box_shape(box, frame, scale) for box in boxes)
    wanted = wanted_labels(restart, boxes, shapes, frame, marks, scale, area)
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


def _offset(offset: int) -> str:
    return {-2: "earliest", -1: "latest"}.get(offset, str(offset))
