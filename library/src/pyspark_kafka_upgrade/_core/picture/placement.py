"""Where a panel's labels go, so that none covers another or a box: geometry, no plotting.

A panel is a rectangle of data coordinates (offsets across, event times up) that the
renderer draws at least ``PANEL_POINTS`` large. A label's room is estimated from its text in
points (generously, for the renderer's font), turned into data units with that size, and
tried at its candidate places in order of preference: the first that stays inside its region
and clear of every box and every label placed before it wins. A label with no free place is
returned as unplaced; the layout then says it in words under the panel instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# The renderer draws a panel's plotting area at least this large, in points (plot/render.py;
# tests/unit/test_plan_picture.py checks it). Smaller than it really is: a label estimated
# on it takes more room here than it does drawn.
PANEL_POINTS = (560.0, 160.0)
# Text in the renderer's font (DejaVu Sans): its widest common glyphs (digits, most capitals)
# are 0.64 em, lowercase letters narrower; lines are 1.2 em apart.
CHAR_EM = 0.64
LINE_EM = 1.25
PAD_POINTS = 2.0  # kept free around each label, so that neighbours do not touch

HorizontalAlign = Literal["left", "center", "right"]
VerticalAlign = Literal["bottom", "center", "top"]


@dataclass(frozen=True, slots=True)
class Rect:
    """An axis-aligned rectangle in a panel's data coordinates."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Rect) -> bool:
        """Whether the two share more than an edge."""
        return (
            self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1
        )

    def within(self, other: Rect) -> bool:
        return (
            other.x0 <= self.x0
            and self.x1 <= other.x1
            and other.y0 <= self.y0
            and self.y1 <= other.y1
        )


@dataclass(frozen=True, slots=True)
class Scale:
    """Data units per point, across and up: what a point of text is worth in the panel."""

    x: float
    y: float

    @classmethod
    def of(cls, area: Rect) -> Scale:
        width, height = PANEL_POINTS
        return cls((area.x1 - area.x0) / width, (area.y1 - area.y0) / height)


@dataclass(frozen=True, slots=True)
class Spot:
    """A candidate place: the text's anchor, and how the text hangs from it."""

    x: float
    y: float
    ha: HorizontalAlign
    va: VerticalAlign


@dataclass(frozen=True, slots=True)
class Label:
    """A text at its place: the renderer draws ``text`` at (x, y) with these alignments."""

    role: str  # what it labels: "batch", "no-event", "restart", "old-end", "waiting", "W", ...
    text: str
    x: float
    y: float
    ha: HorizontalAlign
    va: VerticalAlign
    size: float  # font size, points
    bold: bool
    room: Rect  # the text's estimated extent with PAD_POINTS around it, data coordinates


@dataclass(frozen=True, slots=True)
class Wanted:
    """A label to place: its text, its font, where it may go and where it would rather."""

    role: str
    text: str
    size: float
    spots: tuple[Spot, ...]  # in order of preference
    region: Rect  # it must stay inside
    bold: bool = False


def text_points(text: str, size: float) -> tuple[float, float]:
    """The width and height a text takes, in points, estimated generously."""
    lines = text.split("\n")
    return max(len(line) for line in lines) * CHAR_EM * size, len(lines) * LINE_EM * size


def room(text: str, size: float, spot: Spot, scale: Scale) -> Rect:
    """The extent of ``text`` anchored at ``spot``, with PAD_POINTS around it."""
    width_pt, height_pt = text_points(text, size)
    width, height = width_pt * scale.x, height_pt * scale.y
    x0 = {"left": spot.x, "center": spot.x - width / 2, "right": spot.x - width}[spot.ha]
    y0 = {"bottom": spot.y, "center": spot.y - height / 2, "top": spot.y - height}[spot.va]
    pad_x, pad_y = PAD_POINTS * scale.x, PAD_POINTS * scale.y
    return Rect(x0 - pad_x, y0 - pad_y, x0 + width + pad_x, y0 + height + pad_y)


def place(
    wanted: Sequence[Wanted], obstacles: Sequence[Rect], scale: Scale
) -> tuple[tuple[Label, ...], tuple[Wanted, ...]]:
    """Each wanted label at its first free spot, in the order given; the ones with none."""
    placed: list[Label] = []
    unplaced: list[Wanted] = []
    for want in wanted:
        for spot in want.spots:
            extent = room(want.text, want.size, spot, scale)
            if not extent.within(want.region):
                continue
            if any(extent.overlaps(box) for box in obstacles):
                continue
            if any(extent.overlaps(label.room) for label in placed):
                continue
            placed.append(
                Label(
                    want.role,
                    want.text,
                    spot.x,
                    spot.y,
                    spot.ha,
                    spot.va,
                    want.size,
                    want.bold,
                    extent,
                )
            )
            break
        else:
            unplaced.append(want)
    return tuple(placed), tuple(unplaced)


def along_line(
    y: float, region: Rect, scale: Scale, *, below_first: bool = False
) -> tuple[Spot, ...]:
    """Spots beside a line across the panel at ``y``: its ends first, then along it. Clear of
    the line by more than a label's padding, so that labels above and below it both fit."""
    gap_x, gap_y = 3 * scale.x, (PAD_POINTS + 0.5) * scale.y
    above: tuple[VerticalAlign, float] = ("bottom", y + gap_y)
    below: tuple[VerticalAlign, float] = ("top", y - gap_y)
    sides = (below, above) if below_first else (above, below)
    spots = [
        spot
        for va, at in sides
        for spot in (
            Spot(region.x1 - gap_x, at, "right", va),
            Spot(region.x0 + gap_x, at, "left", va),
        )
    ]
    for tenths in (9, 8, 7, 6, 5, 4, 3, 2, 1):  # then along it, in the gaps between boxes
        x = region.x0 + tenths / 10 * (region.x1 - region.x0)
        spots += [Spot(x, at, "center", va) for va, at in sides]
    return tuple(spots)


def beside_line(
    x: float, region: Rect, scale: Scale, *, bottom_first: bool = False, left_first: bool = False
) -> tuple[Spot, ...]:
    """Spots beside a line up the panel at ``x``: at its top and bottom first, then along."""
    gap_x, gap_y = (PAD_POINTS + 1) * scale.x, (PAD_POINTS + 0.5) * scale.y
    right: tuple[HorizontalAlign, float] = ("left", x + gap_x)
    left: tuple[HorizontalAlign, float] = ("right", x - gap_x)
    sides = (left, right) if left_first else (right, left)
    top: tuple[VerticalAlign, float] = ("top", region.y1 - gap_y)
    bottom: tuple[VerticalAlign, float] = ("bottom", region.y0 + gap_y)
    ends = (bottom, top) if bottom_first else (top, bottom)
    spots = [Spot(at, y, ha, va) for va, y in ends for ha, at in sides]
    for fraction in (0.75, 0.5, 0.25):
        y = region.y0 + fraction * (region.y1 - region.y0)
        spots += [Spot(at, y, ha, "center") for ha, at in sides]
    return tuple(spots)
