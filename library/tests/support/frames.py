"""The aggregation steps composed as the reference query composes them, for tests that start
from events rather than from Kafka rows."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from pyspark_kafka_upgrade._adapters.spark import aggregation
from pyspark_kafka_upgrade._domain.values.validation import MetricSpec, WindowSpec


def windowed_aggregates(
    events: DataFrame,
    *,
    window: WindowSpec,
    keys: Sequence[str],
    metrics: Sequence[MetricSpec],
    replay_after_ms: int | None = None,
    replay_from_event_ms: int | None = None,
) -> DataFrame:
    """Valid events into windowed rows, in the order ``example/query.py`` applies the steps."""
    events = aggregation.drop_counted_events(events, event_time_from_ms=replay_from_event_ms)
    framed = aggregation.window_events(events, window=window, keys=keys, metrics=metrics)
    framed = aggregation.drop_written_windows(framed, window_end_after_ms=replay_after_ms)
    return aggregation.aggregate(framed, keys=keys, metrics=metrics)


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
