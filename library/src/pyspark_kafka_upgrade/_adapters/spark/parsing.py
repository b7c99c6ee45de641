"""Kafka records into events: every record comes out exactly once.

Either as a valid event or with a ``malformed_reason`` that :func:`quarantine_records`
keeps with the raw bytes. Nothing is dropped silently. ``event_parser`` mirrors this module
record by record in pure Python, for the upgrade's scan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, TimestampType

from pyspark_kafka_upgrade._core.query.columns import (
    BATCH_METRICS,
    EVENT_TIME,
    INPUT_ROWS,
    KAFKA_COLUMNS,
    KAFKA_POSITION,
    MALFORMED_REASON,
    MALFORMED_ROWS,
    MAX_EVENT_TIME_US,
    MIN_EVENT_TIME_US,
    REASON,
    TimeSource,
)
from pyspark_kafka_upgrade._core.query.event_fields import JSON_DESCRIPTIONS, payload_fields
from pyspark_kafka_upgrade._core.query.recipe import Parsing
from pyspark_kafka_upgrade._domain.values.project import EventField, EventType
from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError

# Spark's string-to-timestamp cast also takes "12345" (the year 12345), "T10:15" (today)
# and region names, so only the ISO-8601 shape gets that far. A value without an offset is
# UTC, whatever the session's time zone. Digits past the microsecond are truncated.
_ISO_8601 = (
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})?\z"
)
_HAS_OFFSET = r"(Z|[+-][0-9]{2}:[0-9]{2})\z"
# Any text that could close the "[value,size]" wrapper early: a number, then "]".
_ANY_EARLY_CLOSE = r",[ \t\r\n]*[0-9]+[ \t\r\n]*\]"
# A valid JSON text whose first character is "{" is an object; this avoids walking it.
_STARTS_AS_OBJECT = r"\A[ \t\r\n]*\{"


def _iso_timestamp(text: Column) -> Column:
    with_offset = F.concat(text, F.when(~text.rlike(_HAS_OFFSET), F.lit("Z")).otherwise(""))
    return F.when(text.rlike(_ISO_8601), with_offset.try_cast(TimestampType()))


@dataclass(frozen=True, slots=True)
class _JsonType:
    """How a declared type is read from a JSON value, without Spark's lenient casts."""

    # Takes the value's kind as schema_of_variant names it: STRING, BIGINT, OBJECT<...>.
    accepts: Callable[[Column], Column]
    read: Callable[[Column], Column]


def _read_as(type_name: str) -> Callable[[Column], Column]:
    return lambda item: F.try_variant_get(item, "$", type_name)


JSON_TYPES: dict[EventType, _JsonType] = {
    "string": _JsonType(lambda kind: kind == "STRING", _read_as("string")),
    "boolean": _JsonType(lambda kind: kind == "BOOLEAN", _read_as("boolean")),
    "int": _JsonType(lambda kind: kind == "BIGINT", _read_as("int")),
    "bigint": _JsonType(lambda kind: kind == "BIGINT", _read_as("bigint")),
    "double": _JsonType(
        lambda kind: kind.isin("BIGINT", "DOUBLE") | kind.startswith("DECIMAL("),
        _read_as("double"),
    ),
    "timestamp": _JsonType(
        lambda kind: kind == "STRING",
        lambda item: _iso_timestamp(F.try_variant_get(item, "$", "string")),
    ),
}


def parse_events(
    raw: DataFrame,
    *,
    time_source: TimeSource,
    time_field: str,
    max_value_bytes: int,
    events: Sequence[EventField],
) -> DataFrame:
    """Parse Kafka rows into events, keeping every row, with a reason when malformed.

    Returns the Kafka columns, then one column per event field, ``event_time`` and
    ``malformed_reason`` (null for a valid event). On a malformed row the event columns
    are null. The reason names the first problem found, in this order: the value (null,
    oversize, empty, not UTF-8, not JSON, not an object), then each field in schema order
    (missing, null, wrong type).
    """
    fields = payload_fields(events, time_source, time_field)
    outputs = [name for name, _ in fields] + ([EVENT_TIME] if time_source == "kafka" else [])
    clashes = sorted(set(outputs) & set(raw.columns))
    if clashes:
        raise InvalidValueError(f"event fields {clashes} clash with the Kafka columns")

    value = F.col("value")
    size = F.length(value)  # bytes, for a binary column
    text = value.cast(StringType())
    # Oversize or undecodable values never reach the parser: a null input is not parsed.
    parseable = F.when((size > 0) & (size <= max_value_bytes) & F.is_valid_utf8(text), text)
    staged = raw.select("*", _wrapped(parseable, size).alias("_json"))
    document = F.col("_json")
    checks: list[tuple[Column, Column | str]] = [
        (value.isNull(), "value is null"),
        (
            size > max_value_bytes,
            F.format_string(f"value is %d bytes, over the {max_value_bytes}-byte limit", size),
        ),
        (size == 0, "value is empty"),
        (~F.is_valid_utf8(text), "value is not valid UTF-8"),
        (~_complete(document, parseable, size), "value is not valid JSON"),
        (~text.rlike(_STARTS_AS_OBJECT), "value is not a JSON object"),
    ]
    columns = _field_columns(document, fields, checks)
    if time_source == "kafka":
        columns[EVENT_TIME] = F.col("timestamp")
        checks.append((F.col("timestamp").isNull(), "Kafka timestamp is null"))
    return _events_or_reason(raw, staged, columns, checks)


def parse_by(raw: DataFrame, rules: Parsing) -> DataFrame:
    """:func:`parse_events` with the pipeline's ``rules`` (a run's recipe, or verify's)."""
    return parse_events(
        raw,
        events=rules.events,
        time_source=rules.time_source,
        time_field=rules.time_field,
        max_value_bytes=rules.max_value_bytes,
    )


def _wrapped(parseable: Column, size: Column) -> Column:
    """The value parsed inside "[value,size]": null where it is no JSON there."""
    # The JSON parser stops after the first complete value and ignores what follows, so
    # '{"a":1} junk' would pass. Inside "[value,size]" any trailing text either breaks the
    # array or shows up as a wrong second element: $[1] must be the integer size, no $[2].
    digits = size.cast(StringType())
    return F.try_parse_json(F.concat(F.lit("["), parseable, F.lit(","), digits, F.lit("]")))


def _complete(document: Column, parseable: Column, size: Column) -> Column:
    """Whether the wrapped ``document`` holds the whole value as one JSON value."""
    digits = size.cast(StringType())
    count = F.variant_get(document, "$[1]", "variant")
    ends_with_size = (F.schema_of_variant(count) == "BIGINT") & F.try_variant_get(
        count, "$", "bigint"
    ).eqNullSafe(size)
    # Unless the value closes the array itself: '{...},58]junk', padded to 58 bytes, parses
    # as [{...},58]. Its text then holds ",58]"; only for such a value, a second wrapper must
    # be complete too. No value closes both: after it, one needs ",58]", the other ',"n":'.
    # The pattern holds each row's size, so Spark compiles it per row: a constant pattern
    # first, which most values fail, keeps that off the common path.
    closes_early = F.when(
        parseable.rlike(_ANY_EARLY_CLOSE),
        F.regexp(parseable, F.concat(F.lit(r",[ \t\r\n]*"), digits, F.lit(r"[ \t\r\n]*\]"))),
    ).otherwise(False)
    as_member = F.concat(F.lit('{"v":'), parseable, F.lit(',"n":'), digits, F.lit("}"))
    one_document = F.when(closes_early, F.try_parse_json(as_member).isNotNull()).otherwise(True)
    return F.coalesce(
        ends_with_size & F.variant_get(document, "$[2]", "variant").isNull() & one_document,
        F.lit(False),
    )


def _field_columns(
    document: Column,
    fields: Sequence[tuple[str, EventField]],
    checks: list[tuple[Column, Column | str]],
) -> dict[str, Column]:
    """Each field's typed column, by output name; its checks appended to ``checks``."""
    columns: dict[str, Column] = {}
    for output, field in fields:
        json_type = JSON_TYPES[field.type]
        # A "variant" target never casts: this is the JSON value itself, or SQL null if absent.
        item = F.variant_get(document, f"$[0].{field.name}", "variant")
        typed = F.when(json_type.accepts(F.schema_of_variant(item)), json_type.read(item))
        is_json_null = F.is_variant_null(item)
        if field.required:
            checks.append((item.isNull(), f"missing required field '{field.name}'"))
            checks.append((is_json_null, f"required field '{field.name}' is null"))
        checks.append(
            (
                item.isNotNull() & ~is_json_null & typed.isNull(),
                f"field '{field.name}' is not {JSON_DESCRIPTIONS[field.type]}",
            )
        )
        columns[output] = typed
    return columns


def _events_or_reason(
    raw: DataFrame,
    staged: DataFrame,
    columns: dict[str, Column],
    checks: Sequence[tuple[Column, Column | str]],
) -> DataFrame:
    """The Kafka columns, the event columns (null on a malformed row), the first reason."""
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
