"""The pipeline's own logic: the events it reads and the aggregates it computes from them.

This is the module a team edits. Everything here is DataFrame in, DataFrame out, so it runs
the same on a static DataFrame in a unit test as on the Kafka stream.

What to edit:

* ``EVENT_SCHEMA``: the fields of your JSON events, with their types. A field declared
  ``nullable=False`` is required; the others may be absent or JSON ``null``. Supported
  types: string, boolean, int, bigint, double and timestamp (an ISO-8601 string in the
  JSON). The field named by the setting ``events.time_field`` becomes the ``event_time``
  column when ``events.time_source`` is ``"payload"``.
* The grouping keys and metrics are settings (``aggregation.keys``, ``aggregation.metrics``),
  not code: :func:`windowed_aggregates` builds them from :class:`MetricSpec`.

Every Kafka record comes out of :func:`parse_events` exactly once: either as a valid event
or with a ``malformed_reason`` that :func:`quarantine_records` keeps with the raw bytes.
Nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Literal

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .validation import InvalidValueError, MetricSpec, WindowSpec, check_identifier

# -- The events: edit this for your topic ------------------------------------------------

EVENT_SCHEMA = StructType(
    [
        StructField("article_id", StringType(), nullable=False),
        StructField("user_id", StringType(), nullable=True),
        StructField("event_time", TimestampType(), nullable=False),
    ]
)
# Derived, so the schema stays the one place to edit. The time field is required only when
# the event time comes from the payload.
REQUIRED_FIELDS = tuple(field.name for field in EVENT_SCHEMA.fields if not field.nullable)

# -- Column names other parts of the pipeline rely on -------------------------------------

TimeSource = Literal["payload", "kafka"]
EVENT_TIME = "event_time"
MALFORMED_REASON = "malformed_reason"
REASON = "reason"
WINDOW_START = "window_start"
WINDOW_END = "window_end"
# The built-in Kafka source's columns, in its order; ``headers`` only when asked for.
KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
KAFKA_POSITION = ("topic", "partition", "offset")

# Names for DataFrame.observe; the listener reads them from progress.observedMetrics.
BATCH_METRICS = "batch_metrics"
INPUT_ROWS = "input_rows"
MALFORMED_ROWS = "malformed_rows"
MIN_EVENT_TIME_US = "min_event_time_us"
MAX_EVENT_TIME_US = "max_event_time_us"


class UnknownColumnError(InvalidValueError):
    """A grouping key or metric names a column the events do not have."""


# -- Parsing ------------------------------------------------------------------------------

# Spark's string-to-timestamp cast also takes "12345" (the year 12345), "T10:15" (today)
# and region names, so only the ISO-8601 shape gets that far. A value without an offset is
# UTC, whatever the session's time zone. Digits past the microsecond are truncated.
_ISO_8601 = (
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})?\z"
)
_HAS_OFFSET = r"(Z|[+-][0-9]{2}:[0-9]{2})\z"
# A valid JSON text whose first character is "{" is an object; this avoids walking it.
_STARTS_AS_OBJECT = r"\A[ \t\r\n]*\{"


def _iso_timestamp(text: Column) -> Column:
    with_offset = F.concat(text, F.when(~text.rlike(_HAS_OFFSET), F.lit("Z")).otherwise(""))
    return F.when(text.rlike(_ISO_8601), with_offset.try_cast(TimestampType()))


@dataclass(frozen=True, slots=True)
class _JsonType:
    """How a declared type is read from a JSON value, without Spark's lenient casts."""

    description: str
    # Takes the value's kind as schema_of_variant names it: STRING, BIGINT, OBJECT<...>.
    accepts: Callable[[Column], Column]
    read: Callable[[Column], Column]


def _read_as(type_name: str) -> Callable[[Column], Column]:
    return lambda item: F.try_variant_get(item, "$", type_name)


JSON_TYPES: dict[type[DataType], _JsonType] = {
    StringType: _JsonType("a string", lambda kind: kind == "STRING", _read_as("string")),
    BooleanType: _JsonType("a boolean", lambda kind: kind == "BOOLEAN", _read_as("boolean")),
    IntegerType: _JsonType("a 32-bit integer", lambda kind: kind == "BIGINT", _read_as("int")),
    LongType: _JsonType("a 64-bit integer", lambda kind: kind == "BIGINT", _read_as("bigint")),
    DoubleType: _JsonType(
        "a number",
        lambda kind: kind.isin("BIGINT", "DOUBLE") | kind.startswith("DECIMAL("),
        _read_as("double"),
    ),
    TimestampType: _JsonType(
        "an ISO-8601 timestamp",
        lambda kind: kind == "STRING",
        lambda item: _iso_timestamp(F.try_variant_get(item, "$", "string")),
    ),
}


def payload_fields(
    schema: StructType, time_source: str, time_field: str
) -> list[tuple[str, StructField]]:
    """(output column, declared field) for each field read from the JSON."""
    if time_source not in ("payload", "kafka"):
        raise InvalidValueError(
            f"time_source {time_source!r} must be 'payload' or 'kafka'", field="time_source"
        )
    declared = [field.name for field in schema.fields]
    for field in schema.fields:
        check_identifier(field.name, "event field")
        if type(field.dataType) not in JSON_TYPES:
            raise InvalidValueError(
                f"event field {field.name!r} has type {field.dataType.simpleString()}; "
                "use string, boolean, int, bigint, double or timestamp"
            )
    if time_source == "payload":
        if time_field not in declared:
            raise InvalidValueError(
                f"time_field {time_field!r} is not a field of the event schema "
                f"(fields: {', '.join(declared)})",
                field="time_field",
            )
        if not isinstance(schema[time_field].dataType, TimestampType):
            raise InvalidValueError(
                f"time_field {time_field!r} must be declared as a timestamp in the event schema",
                field="time_field",
            )
    fields: list[tuple[str, StructField]] = []
    for field in schema.fields:
        if field.name == time_field:
            if time_source == "payload":
                fields.append((EVENT_TIME, field))
            # With Kafka time the payload's own time field is not read at all.
            continue
        if field.name == EVENT_TIME:
            raise InvalidValueError(
                f"event field {EVENT_TIME!r} would clash with the event time column; "
                f"rename it or set events.time_field = {EVENT_TIME!r}",
                field="time_field",
            )
        fields.append((field.name, field))
    return fields


def parse_events(
    raw: DataFrame,
    *,
    time_source: TimeSource,
    time_field: str,
    max_value_bytes: int,
    schema: StructType = EVENT_SCHEMA,
) -> DataFrame:
    """Parse Kafka rows into events, keeping every row, with a reason when malformed.

    Returns the Kafka columns, then one column per event field, ``event_time`` and
    ``malformed_reason`` (null for a valid event). On a malformed row the event columns
    are null. The reason names the first problem found, in this order: the value (null,
    oversize, empty, not UTF-8, not JSON, not an object), then each field in schema order
    (missing, null, wrong type).
    """
    fields = payload_fields(schema, time_source, time_field)
    outputs = [name for name, _ in fields] + ([EVENT_TIME] if time_source == "kafka" else [])
    clashes = sorted(set(outputs) & set(raw.columns))
    if clashes:
        raise InvalidValueError(f"event fields {clashes} clash with the Kafka columns")

    value = F.col("value")
    size = F.length(value)  # bytes, for a binary column
    text = value.cast(StringType())
    # Oversize or undecodable values never reach the parser: a null input is not parsed.
    parseable = F.when((size > 0) & (size <= max_value_bytes) & F.is_valid_utf8(text), text)
    # The JSON parser stops after the first complete value and ignores what follows, so
    # '{"a":1} junk' would pass. Inside "[value,size]" any trailing text either breaks the
    # array or shows up as a wrong second element.
    wrapped = F.try_parse_json(
        F.concat(F.lit("["), parseable, F.lit(","), size.cast(StringType()), F.lit("]"))
    )
    staged = raw.select("*", wrapped.alias("_json"))
    document = F.col("_json")
    complete = (
        F.try_variant_get(document, "$[1]", "bigint").eqNullSafe(size)
        & F.variant_get(document, "$[2]", "variant").isNull()
    )

    checks: list[tuple[Column, Column | str]] = [
        (value.isNull(), "value is null"),
        (
            size > max_value_bytes,
            F.format_string(f"value is %d bytes, over the {max_value_bytes}-byte limit", size),
        ),
        (size == 0, "value is empty"),
        (~F.is_valid_utf8(text), "value is not valid UTF-8"),
        (~complete, "value is not valid JSON"),
        (~text.rlike(_STARTS_AS_OBJECT), "value is not a JSON object"),
    ]
    columns: dict[str, Column] = {}
    for output, field in fields:
        json_type = JSON_TYPES[type(field.dataType)]
        # A "variant" target never casts: this is the JSON value itself, or SQL null if absent.
        item = F.variant_get(document, f"$[0].{field.name}", "variant")
        typed = F.when(json_type.accepts(F.schema_of_variant(item)), json_type.read(item))
        is_json_null = F.is_variant_null(item)
        if not field.nullable:
            checks.append((item.isNull(), f"missing required field '{field.name}'"))
            checks.append((is_json_null, f"required field '{field.name}' is null"))
        checks.append(
            (
                item.isNotNull() & ~is_json_null & typed.isNull(),
                f"field '{field.name}' is not {json_type.description}",
            )
        )
        columns[output] = typed
    if time_source == "kafka":
        columns[EVENT_TIME] = F.col("timestamp")
        checks.append((F.col("timestamp").isNull(), "Kafka timestamp is null"))

    first, *rest = checks
    reason = reduce(
        lambda chain, check: chain.when(check[0], check[1]), rest, F.when(first[0], first[1])
    )
    checked = staged.select(
        "*",
        *(column.alias(f"_{name}") for name, column in columns.items()),
        reason.alias(MALFORMED_REASON),
    )
    valid = F.col(MALFORMED_REASON).isNull()
    # The event time goes last, wherever the time field is declared.
    order = [name for name in columns if name != EVENT_TIME] + [EVENT_TIME]
    return checked.select(
        *raw.columns,
        *(F.when(valid, F.col(f"_{name}")).alias(name) for name in order),
        MALFORMED_REASON,
    )


def _event_columns(parsed: DataFrame) -> list[str]:
    return [
        name
        for name in parsed.columns
        if name not in (*KAFKA_COLUMNS, "headers", EVENT_TIME, MALFORMED_REASON)
    ]


def valid_events(parsed: DataFrame) -> DataFrame:
    """The valid events: their fields, ``event_time`` and where in Kafka they came from."""
    return parsed.where(F.col(MALFORMED_REASON).isNull()).select(
        *_event_columns(parsed), EVENT_TIME, *KAFKA_POSITION
    )


def quarantine_records(parsed: DataFrame) -> DataFrame:
    """The malformed records, raw bytes intact, with the reason they were set aside."""
    return parsed.where(F.col(MALFORMED_REASON).isNotNull()).select(
        *KAFKA_COLUMNS, F.col(MALFORMED_REASON).alias(REASON)
    )


# -- Per-batch metrics --------------------------------------------------------------------


def batch_metric_columns() -> list[Column]:
    """The aggregate expressions behind :data:`BATCH_METRICS`, named by the constants."""
    valid_time = F.when(F.col(MALFORMED_REASON).isNull(), F.unix_micros(F.col(EVENT_TIME)))
    return [
        F.count(F.lit(1)).alias(INPUT_ROWS),
        F.count(F.col(MALFORMED_REASON)).alias(MALFORMED_ROWS),
        F.min(valid_time).alias(MIN_EVENT_TIME_US),
        F.max(valid_time).alias(MAX_EVENT_TIME_US),
    ]


def observe_batch_metrics(
    parsed: DataFrame, observation: str | Observation = BATCH_METRICS
) -> DataFrame:
    """Attach the per-batch counts and event-time range to the parsed stream."""
    return parsed.observe(observation, *batch_metric_columns())


# -- Aggregation --------------------------------------------------------------------------

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

    ``replay_after_ms`` is set on a restart that replays old events with the same window:
    it keeps only the (event, window) pairs whose window ends strictly after it, so no
    written window is written again and a sliding window's event still counts in its open
    windows. Filtering events by time instead would lose or duplicate rows.

    ``replay_from_event_ms`` is set instead when the window itself changed: the old
    generation's windows no longer line up with the new ones, so the boundary is in event
    time: events before it were counted by the old generation, the rest by this one.
    """
    check_columns(events.columns, keys, metrics)
    if replay_from_event_ms is not None:
        events = events.where(F.col(EVENT_TIME) >= F.timestamp_millis(F.lit(replay_from_event_ms)))
    inputs = [m.column for m in metrics if m.column != "*"]
    metric_inputs = [name for name in dict.fromkeys(inputs) if name not in keys]
    slide = None if window.is_tumbling else f"{window.slide_ms} milliseconds"
    framed = events.withWatermark(EVENT_TIME, f"{window.watermark_delay_ms} milliseconds").select(
        F.window(EVENT_TIME, f"{window.duration_ms} milliseconds", slide).alias("window"),
        *keys,
        *metric_inputs,
    )
    if replay_after_ms is not None:
        framed = framed.where(F.col("window.end") > F.timestamp_millis(F.lit(replay_after_ms)))
    aggregated = framed.groupBy("window", *keys).agg(*(_aggregate(m) for m in metrics))
    return aggregated.select(
        F.col("window.start").alias(WINDOW_START),
        F.col("window.end").alias(WINDOW_END),
        *keys,
        *(metric.name for metric in metrics),
    )


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
