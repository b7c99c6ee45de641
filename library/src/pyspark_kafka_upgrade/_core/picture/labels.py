"""The labels a panel wants, most important first, each with the spots it may take."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark_kafka_upgrade._core.picture.boxes import BatchBox
from pyspark_kafka_upgrade._core.picture.frame import Frame
from pyspark_kafka_upgrade._core.picture.placement import (
    PAD_POINTS,
    Rect,
    Scale,
    Spot,
    Wanted,
    along_line,
    beside_line,
)
from pyspark_kafka_upgrade._core.picture.words import clock
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart


@dataclass(frozen=True, slots=True)
class Marks:
    """The lines across every panel: W, T_min and, when the window changes, E."""

    watermark_ms: int
    t_min: int
    event_split_ms: int | None


# Boxes up to this many get a label each; beyond, the title and the axis say enough.
LABELLED_BOXES = 12
NO_EVENT = "no valid event"
BATCH_FONT = 7.0
LINE_FONT = 8.0


def wanted_labels(
    restart: PartitionRestart,
    boxes: Sequence[BatchBox],
    shapes: Sequence[Rect],
    frame: Frame,
    marks: Marks,
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
        ("W", marks.watermark_ms, f"W {clock(marks.watermark_ms)}", False),
        ("T_min", marks.t_min, f"T_min {clock(marks.t_min)}", True),
    ):
        if marks.watermark_ms > 0 and frame.low < at < frame.high:
            spots = along_line(at, times, scale, below_first=below)
            wanted.append(Wanted(role, text, LINE_FONT, spots, times))
    split = marks.event_split_ms
    if split is not None and frame.low < split < frame.high:
        text = f"E {clock(split)}: new windows from here"
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
