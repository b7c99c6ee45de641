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

from pyspark_kafka_upgrade._core.picture.labels import NO_EVENT
from pyspark_kafka_upgrade._core.picture.layout import PartitionPanel, PlanPicture
from pyspark_kafka_upgrade._domain.errors import ConfigError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import Formatter

FORMATS = (".png", ".svg")
# The figure's width and a panel's height, in inches: at these, a panel's plotting area is at
# least the PANEL_POINTS the layout places its labels on (tests/unit/test_plan_picture.py).
FIGURE_WIDTH_INCHES = 12.0
PANEL_INCHES = 3.2
INSTALL = "pip install 'pyspark-kafka-upgrade[plot]'"

WRITTEN = "#b8b8b8"
OPEN = "#f4a261"
FEEDS = "#e76f51"
REPLAY = "#2a9d8f"
LATE = "#6d597a"
INK = "#264653"
LABEL_COLOURS = {"restart": REPLAY, "T_min": FEEDS, "E": LATE, "waiting": LATE}


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
            draw_figure(picture).savefig(
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


def draw_figure(picture: PlanPicture) -> Figure:
    """The picture as a matplotlib figure, not yet written anywhere."""
    from matplotlib.figure import Figure

    header = _header_text(picture)
    heights = [max(1.25, 0.55 + 0.16 * header.count("\n"))]
    for panel in picture.panels:
        # The panel, then its notes in a row of their own: they never cover a box.
        heights += [PANEL_INCHES, 0.1 + 0.15 * len(panel.notes)]
    if picture.summarised:
        heights.append(2.6)
    figure = Figure(figsize=(FIGURE_WIDTH_INCHES, 0.6 + sum(heights)), layout="constrained")
    figure.suptitle(picture.title, fontsize=12, fontweight="bold", color=INK)
    grid = figure.add_gridspec(len(heights), 2, width_ratios=[6, 1], height_ratios=heights)
    # The reasoning on the left, the legend on the right: side by side, never on each other.
    cells = grid[0, :].subgridspec(1, 2, width_ratios=[1.15, 1])
    _draw_header(figure.add_subplot(cells[0, 0]), figure.add_subplot(cells[0, 1]), picture, header)
    for index, panel in enumerate(picture.panels):
        row = 1 + 2 * index
        axes = figure.add_subplot(grid[row, 0])
        _draw_panel(axes, panel, picture)
        windows = figure.add_subplot(grid[row, 1], sharey=axes)
        _draw_windows(windows, picture)
        _draw_notes(figure.add_subplot(grid[row + 1, :]), panel)
    if picture.summarised:
        _draw_summary(figure.add_subplot(grid[len(heights) - 1, :]), picture)
    return figure


def _header_text(picture: PlanPicture) -> str:
    # 88 characters of 8.5 points fit the left half of the header's width.
    return "\n".join(textwrap.fill(line, 88) for line in picture.lines)


def _draw_header(axes: Axes, legend: Axes, picture: PlanPicture, text: str) -> None:
    """The plan's reasoning in a few lines, and the legend every panel shares."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    axes.axis("off")
    axes.text(0.0, 1.0, text, transform=axes.transAxes, va="top", fontsize=8.5, color=INK)
    legend.axis("off")
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
    if picture.frame.band_bottom is not None:
        handles.append(
            Patch(
                facecolor=WRITTEN,
                edgecolor=INK,
                hatch="xxx",
                ls=":",
                label=f"batch with {NO_EVENT} (band at the bottom)",
            )
        )
    legend.legend(
        handles=handles,
        loc="upper right",
        ncols=2,
        fontsize=7.5,
        frameon=False,
        borderaxespad=0.0,
    )


def _draw_panel(axes: Axes, panel: PartitionPanel, picture: PlanPicture) -> None:
    # In this order: later artists are drawn over earlier ones (and follow them in an SVG).
    _draw_axes(axes, panel, picture)
    _draw_marks(axes, picture)
    _draw_boxes(axes, panel)
    _draw_offsets(axes, panel)
    _draw_labels(axes, panel)
    axes.grid(axis="y", color="#eeeeee")


def _draw_axes(axes: Axes, panel: PartitionPanel, picture: PlanPicture) -> None:
    """Limits, ticks and titles; under the event times, the band of batches without one."""
    frame = picture.frame
    low, high = frame.low, frame.high
    axes.set_xlim(*panel.x_limits)
    axes.set_ylim(frame.bottom, high)
    axes.yaxis.set_major_formatter(_time_formatter(high - low))
    ticks = _boundaries(picture) or [t for t in axes.get_yticks() if low <= t <= high]
    axes.set_ylabel("event time (UTC)")
    axes.set_xlabel("offset")
    axes.set_title(panel.title, loc="left", fontsize=10, color=INK)
    if frame.band_bottom is not None:
        # Batches with no valid event have no time: a band of their own, under the times.
        axes.axhspan(frame.band_bottom, low, color="#f3f3f3", lw=0)
        axes.axhline(low, color=WRITTEN, lw=0.8)
        middle = (frame.band_bottom + low) / 2
        axes.set_yticks(
            [*ticks, middle], [*(_at(t).strftime(_pattern(high - low)) for t in ticks), NO_EVENT]
        )
        axes.get_yticklabels()[-1].set_fontsize(7)
    else:
        axes.set_yticks(ticks)


def _draw_marks(axes: Axes, picture: PlanPicture) -> None:
    """The event times across the panel: the open windows' from T_min, W, T_min and E."""
    low, high = picture.frame.low, picture.frame.high
    # Events at or after T_min can still fall in an open window: that band is rebuilt.
    if picture.earliest_open_ms < high:
        axes.axhspan(max(picture.earliest_open_ms, low), high, color=OPEN, alpha=0.12, lw=0)
    if picture.watermark_ms > 0 and low < picture.watermark_ms < high:
        axes.axhline(picture.watermark_ms, color=INK, lw=1.4)
    if low < picture.earliest_open_ms < high:
        axes.axhline(picture.earliest_open_ms, color=FEEDS, lw=1, ls="--")
    if picture.event_split_ms is not None and low < picture.event_split_ms < high:
        axes.axhline(picture.event_split_ms, color=LATE, lw=1.2, ls="-.")


def _draw_boxes(axes: Axes, panel: PartitionPanel) -> None:
    for box, shape in zip(panel.boxes, panel.shapes, strict=True):
        axes.add_patch(
            _rectangle(
                (shape.x0, shape.y0),
                shape.x1 - shape.x0,
                shape.y1 - shape.y0,
                facecolor=FEEDS if box.can_feed_open else WRITTEN,
                alpha=0.55,
                edgecolor=INK,
                lw=0.6,
                ls=":" if box.eventless else "-",
                hatch="xxx" if box.eventless else "",
                gid=f"batch-{box.first_batch}",  # an SVG names each box by its batch
            )
        )


def _draw_offsets(axes: Axes, panel: PartitionPanel) -> None:
    """The offsets up the panel: the restart and what it replays, the old end, what waits."""
    if panel.restart_offset is not None and panel.restart_offset >= 0:
        end = panel.old_end_offset if panel.old_end_offset is not None else panel.restart_offset
        if end > panel.restart_offset:
            axes.axvspan(panel.restart_offset, end, color=REPLAY, alpha=0.15, hatch="//", lw=0)
        axes.axvline(panel.restart_offset, color=REPLAY, lw=2)
    if panel.old_end_offset is not None:
        axes.axvline(panel.old_end_offset, color=INK, lw=1, ls=":")
    waiting = panel.waiting_end_offset
    if waiting is not None and panel.old_end_offset is not None and waiting > panel.old_end_offset:
        axes.axvspan(panel.old_end_offset, waiting, color=LATE, alpha=0.08, lw=0)


def _draw_labels(axes: Axes, panel: PartitionPanel) -> None:
    for label in panel.labels:
        # Placed by the layout, clear of every box and every other label.
        axes.text(
            label.x,
            label.y,
            label.text,
            ha=label.ha,
            va=label.va,
            fontsize=label.size,
            color=LABEL_COLOURS.get(label.role, INK),
            fontweight="bold" if label.bold else "normal",
            bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "alpha": 0.7, "lw": 0},
        )


def _draw_notes(axes: Axes, panel: PartitionPanel) -> None:
    """Under the panel: why it restarts there, and anything the panel had no room for."""
    axes.axis("off")
    axes.text(
        0.0,
        1.0,
        "\n".join(panel.notes),
        transform=axes.transAxes,
        va="top",
        fontsize=7.5,
        color=INK,
    )


def _boundaries(picture: PlanPicture) -> list[int]:
    """Window starts and ends as the time ticks, when few enough to read."""
    edges = sorted(
        {bar.start_ms for bar in picture.windows} | {bar.end_ms for bar in picture.windows}
    )
    low, high = picture.event_range
    inside = [edge for edge in edges if low <= edge <= high]
    return inside if 2 <= len(inside) <= 14 else []


def _draw_windows(axes: Axes, picture: PlanPicture) -> None:
    axes.set_title("windows", fontsize=9, color=INK)
    low = picture.frame.low  # under it is the band of batches without events: no time
    for bar in picture.windows:
        if bar.end_ms <= low:
            continue
        axes.add_patch(
            _rectangle(
                (bar.lane, max(bar.start_ms, low)),
                0.8,
                bar.end_ms - max(bar.start_ms, low),
                facecolor=WRITTEN if bar.written else OPEN,
                edgecolor="white",
                lw=0.8,
                alpha=1.0 if bar.written or picture.event_split_ms is None else 0.35,
                hatch="" if bar.written else "..",
            )
        )
    if picture.watermark_ms > 0:
        axes.axhline(picture.watermark_ms, color=INK, lw=1.4)
    axes.set_xlim(-0.1, picture.lanes)
    axes.set_xticks([])
    axes.tick_params(labelleft=False)
    # Under the strip, not on it: the text would cover the windows.
    axes.set_xlabel(
        "grey: written\norange: open"
        + ("" if picture.event_split_ms is None else ",\nnot carried over"),
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

    pattern = _pattern(span_ms)
    return FuncFormatter(lambda value, _: _at(value).strftime(pattern))


def _pattern(span_ms: int) -> str:
    return "%H:%M:%S" if span_ms < 86_400_000 else "%m-%d %H:%M"


def _at(ms: float) -> datetime:
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=float(ms))
    except OverflowError:
        return datetime(1970, 1, 1, tzinfo=UTC)
