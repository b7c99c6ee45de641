"""The event times every panel shows, and where a batch's box stands in them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark_kafka_upgrade._core.picture.boxes import BatchBox
from pyspark_kafka_upgrade._core.picture.placement import PANEL_POINTS, Rect, Scale
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan

# Points of a panel's height: the band of batches with no valid event, under the event
# times; and the room kept free above the highest box, for the restart offset's label.
BAND_POINTS = 16.0
HEAD_POINTS = 28.0


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


def frame_of(plan: UpgradePlan, t_min: int, boxes: Sequence[BatchBox]) -> Frame:
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


def box_shape(box: BatchBox, frame: Frame, scale: Scale) -> Rect:
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
