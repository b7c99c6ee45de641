"""Draw a plan's picture (``picture.layout``) to a PNG or SVG file with matplotlib.

matplotlib is the ``plot`` extra, imported only here and only when a picture is asked for,
so the core install stays small. Figures are built without pyplot: no global state, no
display, safe in a driver or a test. The plan's offsets go into the file's metadata and, in
an SVG, every label stays text, so a picture can be searched and checked against its plan.
"""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark_kafka_upgrade.errors import ConfigError
from pyspark_kafka_upgrade.picture.layout import PartitionPanel, PlanPicture

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import Formatter

FORMATS = (".png", ".svg")
INSTALL = "pip install 'pyspark-kafka-upgrade[plot]'"

WRITTEN = "#b8b8b8"
OPEN = "#f4a261"
FEEDS = "#e76f51"
REPLAY = "#2a9d8f"
LATE = "#6d597a"
INK = "#264653"


class PlotUnavailableError(ConfigError):
    """The plot extra is not installed."""


class PlotFileError(ConfigError):
    """The picture cannot be written where it was asked for."""


def check_plot_path(path: Path) -> None:
    """Refuse a file name the renderer cannot write before any work is done."""
    if path.suffix.lower() not in FORMATS:
        raise PlotFileError(f"--plot {path}: the picture is a .png or a .svg file")
    if not path.parent.exists():
        raise PlotFileError(f"--plot {path}: directory {path.parent} does not exist")
    _matplotlib()


def write_picture(picture: PlanPicture, path: Path) -> Path:
    """Draw ``picture`` into ``path`` (.png or .svg); returns the path written."""
    check_plot_path(path)
    from matplotlib import rc_context

    try:
        # Labels stay text in an SVG, so the plan's offsets can be searched for in it.
        with rc_context({"svg.fonttype": "none", "font.size": 9}):
            _draw(picture).savefig(
                path, dpi=110, metadata=dict(picture.metadata), format=path.suffix.lower()[1:]
            )
    except OSError as error:
        raise PlotFileError(f"--plot {path}: {error.strerror or error}") from None
    return path


def _matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotUnavailableError(
            f"--plot needs matplotlib, which the plot extra installs: {INSTALL}"
        ) from None


def _draw(picture: PlanPicture) -> Figure:
    from matplotlib.figure import Figure

    rows = len(picture.panels) + (1 if picture.summarised else 0)
    heights = [1.25] + [3.2] * len(picture.panels) + ([2.6] if picture.summarised else [])
    figure = Figure(figsize=(12, 0.6 + sum(heights)), layout="constrained")
    figure.suptitle(picture.title, fontsize=12, fontweight="bold", color=INK)
    grid = figure.add_gridspec(rows + 1, 2, width_ratios=[6, 1], height_ratios=heights)
    _draw_header(figure.add_subplot(grid[0, :]), picture)
    for row, panel in enumerate(picture.panels, start=1):
        axes = figure.add_subplot(grid[row, 0])
        _draw_panel(axes, panel, picture)
        windows = figure.add_subplot(grid[row, 1], sharey=axes)
        _draw_windows(windows, picture)
    if picture.summarised:
        _draw_summary(figure.add_subplot(grid[rows, :]), picture)
    return figure


def _draw_header(axes: Axes, picture: PlanPicture) -> None:
    """The plan's reasoning in two lines, and the legend every panel shares."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    axes.axis("off")
    axes.text(
        0.0,
        1.0,
        "\n".join(textwrap.fill(line, 95) for line in picture.lines),
        transform=axes.transAxes,
        va="top",
        fontsize=8.5,
        color=INK,
    )
    handles = [
        Patch(
            facecolor=WRITTEN, edgecolor=INK, alpha=0.55, label="batch: its offsets x event times"
        ),
        Patch(
            facecolor=FEEDS, edgecolor=INK, alpha=0.55, label="batch that can feed an open window"
        ),
        Patch(facecolor=OPEN, alpha=0.25, label="event times of open windows (from T_min)"),
        Patch(facecolor=REPLAY, alpha=0.25, hatch="//", label="records to replay"),
        Patch(facecolor=LATE, alpha=0.15, label="waiting after the old end"),
        Line2D([], [], color=INK, lw=1.4, label="W: watermark of the last batch"),
        Line2D([], [], color=FEEDS, lw=1, ls="--", label="T_min"),
        Line2D([], [], color=REPLAY, lw=2, label="restart offset"),
    ]
    axes.legend(
        handles=handles,
        loc="upper right",
        ncols=2,
        fontsize=7.5,
        frameon=False,
        bbox_to_anchor=(1.0, 1.08),
    )


def _draw_panel(axes: Axes, panel: PartitionPanel, picture: PlanPicture) -> None:
    low, high = picture.event_range
    axes.set_ylim(low, high)
    axes.yaxis.set_major_formatter(_time_formatter(high - low))
    ticks = _boundaries(picture)
    if ticks:
        axes.set_yticks(ticks)
    axes.set_ylabel("event time (UTC)")
    axes.set_xlabel("offset")
    axes.set_title(panel.title, loc="left", fontsize=10, color=INK)
    # Events at or after T_min can still fall in an open window: that band is rebuilt.
    axes.axhspan(picture.earliest_open_ms, high, color=OPEN, alpha=0.12, lw=0)
    axes.axhline(picture.watermark_ms, color=INK, lw=1.4)
    axes.axhline(picture.earliest_open_ms, color=FEEDS, lw=1, ls="--")
    for box in panel.boxes:
        valid = box.min_event_ms is not None and box.max_event_ms is not None
        # A batch of malformed records only has no event time: a short bar on the floor.
        bottom = low if box.min_event_ms is None else max(box.min_event_ms, low)
        top = low + (high - low) / 30 if box.max_event_ms is None else min(box.max_event_ms, high)
        axes.add_patch(
            _rectangle(
                (box.start_offset, bottom),
                box.end_offset - box.start_offset,
                max(top - bottom, (high - low) / 200),
                facecolor=FEEDS if box.can_feed_open else WRITTEN,
                alpha=0.55,
                edgecolor=INK,
                lw=0.6,
                ls="-" if valid else ":",
            )
        )
        if len(panel.boxes) <= 12:
            axes.annotate(
                box.label if valid else f"{box.label}: no valid event",
                ((box.start_offset + box.end_offset) / 2, top),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=7,
                color=INK,
            )
    left, right = _offset_range(panel)
    axes.set_xlim(left, right)
    if panel.restart_offset is not None and panel.restart_offset >= 0:
        end = panel.old_end_offset if panel.old_end_offset is not None else panel.restart_offset
        if end > panel.restart_offset:
            axes.axvspan(panel.restart_offset, end, color=REPLAY, alpha=0.15, hatch="//", lw=0)
        axes.axvline(panel.restart_offset, color=REPLAY, lw=2)
        axes.annotate(
            f"restart {panel.restart_offset}\nreplay {panel.restart.records_to_replay or 0}",
            (panel.restart_offset, high),
            xytext=(4, -4),
            textcoords="offset points",
            va="top",
            fontsize=8,
            color=REPLAY,
            fontweight="bold",
        )
    if panel.old_end_offset is not None:
        axes.axvline(panel.old_end_offset, color=INK, lw=1, ls=":")
        _note(axes, f"old end {panel.old_end_offset}", (panel.old_end_offset, low), (4, 4), INK)
    waiting = (panel.waiting_end_offset or 0) - (panel.old_end_offset or 0)
    if panel.waiting_end_offset is not None and panel.old_end_offset is not None and waiting > 0:
        axes.axvspan(panel.old_end_offset, panel.waiting_end_offset, color=LATE, alpha=0.08, lw=0)
        late = "not counted" if panel.late_records is None else f"{panel.late_records} late"
        _note(axes, f"{waiting} waiting: {late}", (panel.waiting_end_offset, low), (-4, 18), LATE)
    watermark = "not yet set" if picture.watermark_ms <= 0 else _clock(picture.watermark_ms)
    _note(axes, f"W {watermark}", (right, picture.watermark_ms), (-4, 2), INK)
    if picture.event_split_ms is not None:
        axes.axhline(picture.event_split_ms, color=LATE, lw=1.2, ls="-.")
        _note(
            axes,
            f"E {_clock(picture.event_split_ms)}: the new windows count events from here",
            (left, picture.event_split_ms),
            (4, 2),
            LATE,
        )
    _note(
        axes,
        f"T_min {_clock(picture.earliest_open_ms)}",
        (right, picture.earliest_open_ms),
        (-4, -10),
        FEEDS,
    )
    axes.text(
        0.01,
        0.02,
        textwrap.fill(f"Why: {panel.restart.reason}", 110)
        + (
            f"\nLost to retention: {panel.restart.lost_records}"
            if panel.restart.lost_records
            else ""
        ),
        transform=axes.transAxes,
        fontsize=7.5,
        color=INK,
        va="bottom",
        bbox={"facecolor": "white", "alpha": 0.8, "lw": 0},
    )
    axes.grid(axis="y", color="#eeeeee")


def _boundaries(picture: PlanPicture) -> list[int]:
    """Window starts and ends as the time ticks, when few enough to read."""
    edges = sorted(
        {bar.start_ms for bar in picture.windows} | {bar.end_ms for bar in picture.windows}
    )
    low, high = picture.event_range
    inside = [edge for edge in edges if low <= edge <= high]
    return inside if 2 <= len(inside) <= 14 else []


def _note(
    axes: Axes,
    text: str,
    at: tuple[float, float],
    shift: tuple[float, float],
    colour: str,
) -> None:
    """A small label ``shift`` points from ``at``: right-aligned when shifted left."""
    axes.annotate(
        text,
        at,
        xytext=shift,
        textcoords="offset points",
        ha="right" if shift[0] < 0 else "left",
        fontsize=8,
        color=colour,
    )


def _offset_range(panel: PartitionPanel) -> tuple[float, float]:
    points = [
        offset
        for offset in (panel.restart_offset, panel.old_end_offset, panel.waiting_end_offset)
        if offset is not None and offset >= 0
    ]
    points += [box.start_offset for box in panel.boxes] + [box.end_offset for box in panel.boxes]
    if not points:
        return 0.0, 1.0
    left, right = min(points), max(points)
    margin = max(1.0, (right - left) * 0.04)
    return left - margin, right + margin


def _draw_windows(axes: Axes, picture: PlanPicture) -> None:
    axes.set_title("windows", fontsize=9, color=INK)
    for bar in picture.windows:
        axes.add_patch(
            _rectangle(
                (bar.lane, bar.start_ms),
                0.8,
                bar.end_ms - bar.start_ms,
                facecolor=WRITTEN if bar.written else OPEN,
                edgecolor="white",
                lw=0.8,
                alpha=1.0 if bar.written or picture.event_split_ms is None else 0.35,
                hatch="" if bar.written else "..",
            )
        )
    axes.axhline(picture.watermark_ms, color=INK, lw=1.4)
    axes.set_xlim(-0.1, picture.lanes)
    axes.set_xticks([])
    axes.tick_params(labelleft=False)
    axes.text(
        0.5,
        0.01,
        "grey: written\norange: open"
        + ("" if picture.event_split_ms is None else ",\nnot carried over"),
        transform=axes.transAxes,
        ha="center",
        fontsize=7,
        color=INK,
    )


def _draw_summary(axes: Axes, picture: PlanPicture) -> None:
    counts = [bar.records_to_replay or 0 for bar in picture.summary]
    colours = [REPLAY if bar.drawn else WRITTEN for bar in picture.summary]
    axes.bar(range(len(counts)), counts, color=colours, width=1.0)
    axes.set_xlim(-0.5, len(counts) - 0.5)
    axes.set_ylabel("records to replay")
    axes.set_xlabel("partition (in order; coloured: drawn above)")
    axes.set_title(picture.summary_text, loc="left", fontsize=9, color=INK)
    axes.grid(axis="y", color="#eeeeee")


def _rectangle(xy: tuple[float, float], width: float, height: float, **style: Any) -> Rectangle:
    from matplotlib.patches import Rectangle

    return Rectangle(xy, width, height, **style)


def _time_formatter(span_ms: int) -> Formatter:
    from matplotlib.ticker import FuncFormatter

    pattern = "%H:%M:%S" if span_ms < 86_400_000 else "%m-%d %H:%M"
    return FuncFormatter(lambda value, _: _at(value).strftime(pattern))


def _clock(ms: int) -> str:
    return _at(ms).strftime("%H:%M:%S")


def _at(ms: float) -> datetime:
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=float(ms))
    except OverflowError:
        return datetime(1970, 1, 1, tzinfo=UTC)
