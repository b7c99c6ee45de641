"""Events into windowed aggregates, valid in append mode when streaming.

The upgrade's replay filter is named, in two steps, :func:`drop_counted_events` and
:func:`drop_written_windows`, so that what a generation started from a plan leaves out is
visible in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ..values.validation import InvalidValueError, MetricSpec, WindowSpec
from .columns import EVENT_TIME, WINDOW_END, WINDOW_START


class UnknownColumnError(InvalidValueError):
    """A grouping key or metric names a column the events do not have."""


_METRIC_FUNCTIONS: dict[str, Callable[[Column], Column]] = {
    "count": F.count,
    "sum": F.sum,
    "min": F.min,
    "max": F.max,
    "avg": F.avg,
    "approx_count_distinct": F.approx_count_distinct,
}


def check_columns(
    columns: Sequence[str], keys: Sequence[str], metrics: Sequence[MetricSpec]
) -> None:
    """Refuse keys and metrics over columns the events lack, and repeated output names."""
    listing = ", ".join(columns)
    for key in keys:
        if key not in columns:
            raise UnknownColumnError(
                f"grouping key {key!r} is not a column of the events; available: {listing}",
                field="keys",
            )
    for metric in metrics:
        if metric.function not in _METRIC_FUNCTIONS:
            raise InvalidValueError(
                f"metric {metric.name} uses unknown function {metric.function!r}",
                field="metrics",
            )
        if metric.column != "*" and metric.column not in columns:
            raise UnknownColumnError(
                f"metric {metric.name} = {metric.expression}: {metric.column!r} is not a "
                f"column of the events; available: {listing}",
                field="metrics",
            )
    names = [WINDOW_START, WINDOW_END, *keys, *(metric.name for metric in metrics)]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InvalidValueError(f"output columns {repeated} appear more than once")


def _aggregate(metric: MetricSpec) -> Column:
    argument = F.lit(1) if metric.column == "*" else F.col(metric.column)
    return _METRIC_FUNCTIONS[metric.function](argument).alias(metric.name)


def windowed_aggregates(
    events: DataFrame,
    *,
    window: WindowSpec,
    keys: Sequence[str],
    metrics: Sequence[MetricSpec],
    replay_after_ms: int | None = None,
    replay_from_event_ms: int | None = None,
) -> DataFrame:
    """Aggregate events per event-time window and key; valid in append mode when streaming.

    The two ``replay_*`` bounds are set on a generation started from an upgrade plan: the
    replay filter, in two steps, :func:`drop_counted_events` and
    :func:`drop_written_windows`.
    """
    check_columns(events.columns, keys, metrics)
    events = drop_counted_events(events, event_time_from_ms=replay_from_event_ms)
    inputs = [m.column for m in metrics if m.column != "*"]
    metric_inputs = [name for name in dict.fromkeys(inputs) if name not in keys]
    slide = None if window.is_tumbling else f"{window.slide_ms} milliseconds"
    framed = events.withWatermark(EVENT_TIME, f"{window.watermark_delay_ms} milliseconds").select(
        F.window(EVENT_TIME, f"{window.duration_ms} milliseconds", slide).alias("window"),
        *keys,
        *metric_inputs,
    )
    framed = drop_written_windows(framed, window_end_after_ms=replay_after_ms)
    aggregated = framed.groupBy("window", *keys).agg(*(_aggregate(m) for m in metrics))
    return aggregated.select(
        F.col("window.start").alias(WINDOW_START),
        F.col("window.end").alias(WINDOW_END),
        *keys,
        *(metric.name for metric in metrics),
    )


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
    return framed.where(F.col("window.end") > F.timestamp_millis(F.lit(window_end_after_ms)))


def aggregate_schema(
    events: DataFrame | StructType, keys: Sequence[str], metrics: Sequence[MetricSpec]
) -> list[tuple[str, str]]:
    """(name, Spark type) of each output column, as Spark derives them for these events."""
    if isinstance(events, StructType):
        events = SparkSession.active().createDataFrame([], events)
    # Types do not depend on the window's length, so any window will do.
    placeholder = WindowSpec(duration_ms=1_000, slide_ms=1_000, watermark_delay_ms=0)
    built = windowed_aggregates(events, window=placeholder, keys=keys, metrics=metrics)
    return [(field.name, field.dataType.simpleString()) for field in built.schema.fields]
