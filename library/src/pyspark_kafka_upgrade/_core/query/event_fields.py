"""What the parser reads from each JSON value, and which columns the events then have.

Pure: the Spark steps (``spark.parsing``, ``spark.aggregation``), the parser's mirror
(``event_parser``) and the output types (``aggregate_types``) all start from these answers,
so they refuse the same settings with the same words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from pyspark_kafka_upgrade._core.query.columns import EVENT_TIME, WINDOW_END, WINDOW_START
from pyspark_kafka_upgrade._domain.values.project import EventField, EventType
from pyspark_kafka_upgrade._domain.values.validation import (
    METRIC_FUNCTIONS,
    InvalidValueError,
    MetricSpec,
)

# How each type's JSON value is described when a record has another.
JSON_DESCRIPTIONS: Final[Mapping[EventType, str]] = {
    "string": "a string",
    "boolean": "a boolean",
    "int": "a 32-bit integer",
    "bigint": "a 64-bit integer",
    "double": "a number",
    "timestamp": "an ISO-8601 timestamp",
}


class UnknownColumnError(InvalidValueError):
    """A grouping key or metric names a column the events do not have."""


def payload_fields(
    events: Sequence[EventField], time_source: str, time_field: str
) -> list[tuple[str, EventField]]:
    """(output column, declared field) for each field read from the JSON."""
    if time_source not in ("payload", "kafka"):
        raise InvalidValueError(
            f"time_source {time_source!r} must be 'payload' or 'kafka'", field="time_source"
        )
    declared = {event.name: event for event in events}
    if time_source == "payload":
        if time_field not in declared:
            raise InvalidValueError(
                f"time_field {time_field!r} is not a field of the event schema "
                f"(fields: {', '.join(declared)})",
                field="time_field",
            )
        if declared[time_field].type != "timestamp":
            raise InvalidValueError(
                f"time_field {time_field!r} must be declared as a timestamp in the event schema",
                field="time_field",
            )
    fields: list[tuple[str, EventField]] = []
    for event in events:
        if event.name == time_field:
            if time_source == "payload":
                fields.append((EVENT_TIME, event))
            # With Kafka time the payload's own time field is not read at all.
            continue
        if event.name == EVENT_TIME:
            raise InvalidValueError(
                f"event field {EVENT_TIME!r} would clash with the event time column; "
                f"rename it or set events.time_field = {EVENT_TIME!r}",
                field="time_field",
            )
        fields.append((event.name, event))
    return fields


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
        if metric.function not in METRIC_FUNCTIONS:
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
