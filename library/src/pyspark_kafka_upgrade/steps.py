"""The steps a project's query module composes, each taking the run's :class:`Recipe`.

A project's ``query.py`` reads, from the Kafka rows to the windowed rows::

    parsed = steps.parse_events(raw, recipe)
    events = steps.valid_events(steps.observe_batch_metrics(parsed))
    events = steps.drop_counted_events(events, recipe)      # replay filter, window changed
    framed = steps.window_events(events, recipe)            # watermark, then windows
    framed = steps.drop_written_windows(framed, recipe)     # replay filter: window.end > W
    return steps.aggregate(framed, recipe)

and ``malformed_records`` is ``steps.quarantine_records(steps.parse_events(raw, recipe))``.
The library reads Kafka into ``raw``, appends what the query returns to the generation's
output, and attaches the offset ledger's listener.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from pyspark_kafka_upgrade._adapters.spark import aggregation, parsing
from pyspark_kafka_upgrade._adapters.spark.parsing import (
    observe_batch_metrics,
    quarantine_records,
    valid_events,
)
from pyspark_kafka_upgrade._core.query.recipe import Recipe

__all__ = [
    "Recipe",
    "aggregate",
    "drop_counted_events",
    "drop_written_windows",
    "observe_batch_metrics",
    "parse_events",
    "quarantine_records",
    "valid_events",
    "window_events",
]


def parse_events(raw: DataFrame, recipe: Recipe) -> DataFrame:
    """Kafka rows into events, each row kept, with a ``malformed_reason`` when malformed."""
    return parsing.parse_by(raw, recipe)


def drop_counted_events(events: DataFrame, recipe: Recipe) -> DataFrame:
    """The replay filter's first step: a plan that changed the window splits in event time."""
    recipe.applied.add("drop_counted_events")
    return aggregation.drop_counted_events(
        events, event_time_from_ms=recipe.replay.event_time_from_ms
    )


def window_events(events: DataFrame, recipe: Recipe) -> DataFrame:
    return aggregation.window_events(
        events, window=recipe.window, keys=recipe.keys, metrics=recipe.metrics
    )


def drop_written_windows(framed: DataFrame, recipe: Recipe) -> DataFrame:
    """The replay filter's second step: drop (event, window) pairs ending at or before W."""
    recipe.applied.add("drop_written_windows")
    return aggregation.drop_written_windows(
        framed, window_end_after_ms=recipe.replay.window_end_after_ms
    )


def aggregate(framed: DataFrame, recipe: Recipe) -> DataFrame:
    return aggregation.aggregate(framed, keys=recipe.keys, metrics=recipe.metrics)
