"""Events into windowed aggregates, valid in append mode when streaming, as named steps.

    events ─ drop_counted_events ─ window_events ─ drop_written_windows ─ aggregate ─▶ rows

The upgrade's replay filter is two of them, :func:`drop_counted_events` and
:func:`drop_written_windows`, so that what a generation started from a plan leaves out is
visible in the query itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pyspark_kafka_upgrade._core.query.columns import EVENT_TIME, WINDOW_END, WINDOW_START
from pyspark_kafka_upgrade._core.query.event_fields import check_columns
from pyspark_kafka_upgrade._domain.values.validation import MetricSpec, WindowSpec

WINDOW = "window"

_METRIC_FUNCTIONS: dict[str, Callable[[Column], Column]] = {
    "count": F.count,
    "sum": F.sum,
    "min": F.min,
    "max": F.max,
    "avg": F.avg,
    "approx_count_distinct": F.approx_count_distinct,
}


def window_events(
    events: DataFrame, *, window: WindowSpec, keys: Sequence[str], metrics: Sequence[MetricSpec]
) -> DataFrame:
    """The watermark, then one row per (event, window): the window, the keys, the metrics'
    inputs. The watermark's metadata survives the filters that follow."""
    check_columns(events.columns, keys, metrics)
    inputs = [m.column for m in metrics if m.column != "*"]
    metric_inputs = [name for name in dict.fromkeys(inputs) if name not in keys]
    slide = None if window.is_tumbling else f"{window.slide_ms} milliseconds"
    return events.withWatermark(EVENT_TIME, f"{window.watermark_delay_ms} milliseconds").select(
        F.window(EVENT_TIME, f"{window.duration_ms} milliseconds", slide).alias(WINDOW),
        *keys,
        *metric_inputs,
    )


def aggregate(
    framed: DataFrame, *, keys: Sequence[str], metrics: Sequence[MetricSpec]
) -> DataFrame:
    """One row per window and key: its bounds, the keys and the metrics."""
    aggregated = framed.groupBy(WINDOW, *keys).agg(*(_aggregate(m) for m in metrics))
    return aggregated.select(
        F.col(f"{WINDOW}.start").alias(WINDOW_START),
        F.col(f"{WINDOW}.end").alias(WINDOW_END),
        *keys,
        *(metric.name for metric in metrics),
    )


def _aggregate(metric: MetricSpec) -> Column:
    argument = F.lit(1) if metric.column == "*" else F.col(metric.column)
    return metric_function(metric.function)(argument).alias(metric.name)


def metric_function(name: str) -> Callable[[Column], Column]:
    """The Spark aggregate a metric's function names, as the query applies it."""
    return _METRIC_FUNCTIONS[name]


# -- The replay filter: what a generation started from a plan leaves out ------------------


def drop_counted_events(events: DataFrame, *, event_time_from_ms: int | None) -> DataFrame:
    """Set when the window itself changed, so the generations split in event time.

    The old generation's windows no longer line up with the new ones: events before the
    bound were counted by the old generation, the rest by this one. Applied before the
    watermark, as the plan's arithmetic assumes.
    """
    if event_time_from_ms is None:
        return events
    return events.where(F.col(EVENT_TIME) >= F.timestamp_millis(F.lit(event_time_from_ms)))


def drop_written_windows(framed: DataFrame, *, window_end_after_ms: int | None) -> DataFrame:
    """Set on a restart that replays old events with the same window: W of the generation
    before.

    Keeps only the (event, window) pairs whose window ends strictly after W, so no written
    window is written again and a sliding window's event still counts in its open windows.
    Filtering events by time instead would lose or duplicate rows.
    """
    if window_end_after_ms is None:
        return framed
    return framed.where(F.col(f"{WINDOW}.end") > F.timestamp_millis(F.lit(window_end_after_ms)))


# -- The handoff's bound: what a generation handing over at C no longer writes ------------


def keep_windows_through(rows: DataFrame, *, through_ms: int | None) -> DataFrame:
    """Set on a generation that hands over at C: only the windows ending at or before C.

    Applied after the aggregation, to the rows about to be written, so the query restarts
    on its own checkpoint with the state it had: windows after C stay in that state and
    are never written; the generation after it writes them.
    """
    if through_ms is None:
        return rows
    return rows.where(F.col(WINDOW_END) <= F.timestamp_millis(F.lit(through_ms)))
