"""The transformations on static DataFrames of Kafka-shaped rows, and one streaming run.

Every malformed value must come out with its exact reason and its raw bytes; every record
exactly once. Window bounds are compared in epoch milliseconds, so no test depends on the
local time zone.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from pyspark_kafka_upgrade._adapters.kafka.schema import (
    spark_schema,
)
from pyspark_kafka_upgrade._adapters.spark.parsing import (
    batch_metric_columns,
    observe_batch_metrics,
    parse_by,
    parse_events,
    quarantine_records,
    valid_events,
)
from pyspark_kafka_upgrade._core.query.columns import (
    BATCH_METRICS,
    INPUT_ROWS,
    MALFORMED_ROWS,
    MAX_EVENT_TIME_US,
    MIN_EVENT_TIME_US,
)
from pyspark_kafka_upgrade._core.query.event_fields import UnknownColumnError
from pyspark_kafka_upgrade._core.query.recipe import (
    Parsing,
)
from pyspark_kafka_upgrade._domain.values.project import EventField
from pyspark_kafka_upgrade._domain.values.validation import (
    InvalidValueError,
    MetricSpec,
    WindowSpec,
    parse_metric,
)
from pyspark_kafka_upgrade._example.events import EVENTS
from support.frames import aggregate_schema, windowed_aggregates

LIMIT = 262_144
# 2026-11-22T10:00:00Z, a multiple of every window length used here.
BASE_MS = 1_795_341_600_000
KAFKA_MS = 1_795_000_000_123
GOOD: dict[str, Any] = {
    "article_id": "a1",
    "user_id": "u1",
    "event_time": "2026-11-22T10:15:00.250Z",
}
GOOD_US = 1_795_342_500_250_000
_ABSENT = object()


def _utc(ms: int) -> datetime:
    # Exact: dividing by 1000 in floating point can land a microsecond short.
    return datetime.fromtimestamp(ms // 1000, tz=UTC) + timedelta(milliseconds=ms % 1000)


def _event(**changes: Any) -> bytes:
    fields = {**GOOD, **changes}
    return json.dumps({k: v for k, v in fields.items() if v is not _ABSENT}).encode()


def _kafka_frame(
    spark: SparkSession,
    values: Sequence[bytes | None],
    *,
    partition: int = 0,
    timestamps_ms: Sequence[int | None] | None = None,
) -> DataFrame:
    """Kafka rows with offsets 0..n-1; the key is the offset's text, for checking it is kept."""
    stamps = timestamps_ms if timestamps_ms is not None else [KAFKA_MS] * len(values)
    rows = [
        (
            str(offset).encode(),
            value,
            "page-views",
            partition,
            offset,
            None if ms is None else _utc(ms),
            0,
        )
        for offset, (value, ms) in enumerate(zip(values, stamps, strict=True))
    ]
    return spark.createDataFrame(rows, spark_schema(include_headers=False))


def _parse(raw: DataFrame, **overrides: Any) -> DataFrame:
    options: dict[str, Any] = {
        "time_source": "payload",
        "time_field": "event_time",
        "max_value_bytes": LIMIT,
        "events": EVENTS,
    }
    options.update(overrides)
    return parse_events(raw, **options)


def _reasons(parsed: DataFrame) -> list[str | None]:
    rows = parsed.orderBy("partition", "offset").select("malformed_reason").collect()
    return [row.malformed_reason for row in rows]


# -- The declared schema ----------------------------------------------------------------


def test_event_schema_declares_the_page_view_fields() -> None:
    assert [(field.name, field.type) for field in EVENTS] == [
        ("article_id", "string"),
        ("user_id", "string"),
        ("event_time", "timestamp"),
    ]
    assert tuple(field.name for field in EVENTS if field.required) == ("article_id", "event_time")


# -- Malformed values: each case with its exact reason ----------------------------------

NOT_ISO = "field 'event_time' is not an ISO-8601 timestamp"
MALFORMED: list[tuple[str, bytes | None, str]] = [
    ("null value", None, "value is null"),
    ("empty value", b"", "value is empty"),
    ("binary garbage", b"\x00\x9f\xff\xfe garbage \xc3", "value is not valid UTF-8"),
    ("invalid UTF-8 inside a string", _event()[:-2] + b'\xc3\x28"}', "value is not valid UTF-8"),
    ("overlong UTF-8 encoding", b'{"article_id":"\xc0\xaf"}', "value is not valid UTF-8"),
    ("UTF-16 surrogate bytes", b'{"article_id":"\xed\xa0\x80"}', "value is not valid UTF-8"),
    ("text that is not JSON", b"article_id=a1", "value is not valid JSON"),
    ("truncated JSON", _event()[:-9], "value is not valid JSON"),
    ("text after the object", _event() + b" trailing", "value is not valid JSON"),
    ("two objects", _event() + _event(), "value is not valid JSON"),
    ("two objects with a comma", _event() + b"," + _event(), "value is not valid JSON"),
    ("a bracket after the object", _event() + b"]", "value is not valid JSON"),
    ("a repeated key", b'{"article_id":"a","article_id":"b"}', "value is not valid JSON"),
    ("single quotes", b"{'article_id':'a1'}", "value is not valid JSON"),
    ("a byte order mark", b"\xef\xbb\xbf" + _event(), "value is not valid JSON"),
    # Valid JSON, but past the parser's nesting limit: quarantined rather than failing the batch.
    ("nesting 1500 deep", b'{"a":' * 1500 + b"1" + b"}" * 1500, "value is not valid JSON"),
    ("a JSON array", b"[" + _event() + b"]", "value is not a JSON object"),
    ("a JSON string", b'"a1"', "value is not a JSON object"),
    ("a JSON number", b"42", "value is not a JSON object"),
    ("JSON null", b"null", "value is not a JSON object"),
    ("JSON true", b" true ", "value is not a JSON object"),
    ("an empty object", b"{}", "missing required field 'article_id'"),
    ("missing article_id", _event(article_id=_ABSENT), "missing required field 'article_id'"),
    ("null article_id", _event(article_id=None), "required field 'article_id' is null"),
    ("integer article_id", _event(article_id=17), "field 'article_id' is not a string"),
    ("decimal article_id", _event(article_id=1.5e3), "field 'article_id' is not a string"),
    ("boolean article_id", _event(article_id=True), "field 'article_id' is not a string"),
    ("object article_id", _event(article_id={"id": "a1"}), "field 'article_id' is not a string"),
    ("array article_id", _event(article_id=["a1"]), "field 'article_id' is not a string"),
    ("object user_id", _event(user_id={"id": "u1"}), "field 'user_id' is not a string"),
    ("number user_id", _event(user_id=7), "field 'user_id' is not a string"),
    ("missing event_time", _event(event_time=_ABSENT), "missing required field 'event_time'"),
    ("null event_time", _event(event_time=None), "required field 'event_time' is null"),
    ("event_time 'abc'", _event(event_time="abc"), NOT_ISO),
    ("event_time epoch number", _event(event_time=1_795_342_500_250), NOT_ISO),
    ("event_time digits as text", _event(event_time="12345"), NOT_ISO),
    ("event_time date only", _event(event_time="2026-11-22"), NOT_ISO),
    ("event_time time only", _event(event_time="T10:15:00"), NOT_ISO),
    ("event_time without seconds", _event(event_time="2026-11-22T10:15Z"), NOT_ISO),
    ("event_time space separator", _event(event_time="2026-11-22 10:15:00Z"), NOT_ISO),
    ("event_time 30 February", _event(event_time="2026-02-30T10:15:00Z"), NOT_ISO),
    ("event_time hour 24", _event(event_time="2026-11-22T24:00:00Z"), NOT_ISO),
    ("event_time zone name", _event(event_time="2026-11-22T10:15:00 UTC"), NOT_ISO),
    ("event_time trailing newline", _event(event_time="2026-11-22T10:15:00Z\n"), NOT_ISO),
    ("event_time object", _event(event_time={"seconds": 1}), NOT_ISO),
    (
        "the first problem in schema order",
        _event(article_id=1, event_time="abc"),
        "field 'article_id' is not a string",
    ),
]


@pytest.fixture(scope="module")
def malformed_reasons(spark: SparkSession) -> list[str | None]:
    # One DataFrame for every case: one Spark job instead of one per case.
    return _reasons(_parse(_kafka_frame(spark, [value for _, value, _ in MALFORMED])))


@pytest.mark.parametrize(
    ("index", "expected"),
    [(index, reason) for index, (_, _, reason) in enumerate(MALFORMED)],
    ids=[case for case, _, _ in MALFORMED],
)
def test_malformed_value_gets_its_reason(
    malformed_reasons: list[str | None], index: int, expected: str
) -> None:
    assert malformed_reasons[index] == expected


VALID: list[tuple[str, bytes, int]] = [
    ("all fields", _event(), GOOD_US),
    ("no user_id", _event(user_id=_ABSENT), GOOD_US),
    ("null user_id", _event(user_id=None), GOOD_US),
    ("unknown fields are ignored", _event(referrer={"host": "x"}, n=[1, 2]), GOOD_US),
    ("whitespace around the object", b" \n\t" + _event() + b"\r\n ", GOOD_US),
    ("an offset", _event(event_time="2026-11-22T12:15:00.25+02:00"), GOOD_US),
    ("a negative offset", _event(event_time="2026-11-22T09:45:00.250-00:30"), GOOD_US),
    ("no offset is UTC", _event(event_time="2026-11-22T10:15:00.250"), GOOD_US),
    (
        "nanoseconds are truncated",
        _event(event_time="2026-11-22T10:15:00.250999999Z"),
        GOOD_US + 999,
    ),
    ("no fraction", _event(event_time="2026-11-22T10:15:00Z"), GOOD_US - 250_000),
]


def test_valid_values_parse_to_exact_event_times(spark: SparkSession) -> None:
    parsed = _parse(_kafka_frame(spark, [value for _, value, _ in VALID]))
    rows = parsed.orderBy("offset").select(
        "malformed_reason", F.unix_micros("event_time").alias("us")
    )
    got = {
        case: (row.malformed_reason, row.us)
        for (case, _, _), row in zip(VALID, rows.collect(), strict=True)
    }
    assert got == {case: (None, us) for case, _, us in VALID}


def test_valid_events_have_the_event_fields_time_and_kafka_position(spark: SparkSession) -> None:
    values = [_event(), _event(article_id="café ✓", user_id=_ABSENT), b"not json"]
    events = valid_events(_parse(_kafka_frame(spark, values, partition=3)))
    assert events.columns == ["article_id", "user_id", "event_time", "topic", "partition", "offset"]
    assert dict(events.dtypes)["event_time"] == "timestamp"
    rows = events.orderBy("offset").select(
        "article_id", "user_id", F.unix_micros("event_time"), "topic", "partition", "offset"
    )
    assert [tuple(row) for row in rows.collect()] == [
        ("a1", "u1", GOOD_US, "page-views", 3, 0),
        ("café ✓", None, GOOD_US, "page-views", 3, 1),
    ]


def test_parse_events_keeps_the_kafka_columns_and_nulls_fields_of_malformed_rows(
    spark: SparkSession,
) -> None:
    parsed = _parse(_kafka_frame(spark, [_event(event_time="abc")]))
    assert parsed.columns == [
        *spark_schema(include_headers=False).names,
        "article_id",
        "user_id",
        "event_time",
        "malformed_reason",
    ]
    row = parsed.collect()[0]
    # The valid article_id is not passed on from a record that is malformed as a whole.
    assert (row.article_id, row.user_id, row.event_time) == (None, None, None)
    assert row.malformed_reason == NOT_ISO


# -- Size limit -------------------------------------------------------------------------


def test_a_1_mb_value_is_quarantined_unparsed_with_its_bytes_intact(spark: SparkSession) -> None:
    # A valid object: had it been parsed, it would not be quarantined.
    padding = 1_048_576 - len(_event(pad=""))
    value = _event(pad="x" * padding)
    assert len(value) == 1_048_576
    quarantined = quarantine_records(_parse(_kafka_frame(spark, [value])))
    rows = quarantined.select(
        "reason", F.length("value").alias("size"), F.sha2("value", 256).alias("sha")
    ).collect()
    assert [tuple(row) for row in rows] == [
        (
            "value is 1048576 bytes, over the 262144-byte limit",
            1_048_576,
            hashlib.sha256(value).hexdigest(),
        )
    ]


def test_the_limit_is_inclusive(spark: SparkSession) -> None:
    at_limit = _event() + b" " * 10
    over = at_limit + b" "
    parsed = _parse(_kafka_frame(spark, [at_limit, over]), max_value_bytes=len(at_limit))
    assert _reasons(parsed) == [
        None,
        f"value is {len(over)} bytes, over the {len(at_limit)}-byte limit",
    ]


# -- One JSON document, not a prefix that closes the parser's wrapper early ---------------


def _padded_to_its_size(body: Callable[[int], bytes]) -> bytes:
    """``body(n)`` padded with spaces to exactly n bytes, for the smallest n that fits."""
    for size in itertools.count(1):
        value = body(size)
        if len(value) <= size:
            return value + b" " * (size - len(value))
    raise AssertionError("unreachable")


_ONE_EVENT = b'{"article_id":"a","event_time":"2026-11-22T10:00:00Z"}'


def test_a_value_closing_the_json_wrapper_early_is_not_json(spark: SparkSession) -> None:
    """parse_events parses "[" + value + "," + size + "]". A value that ends the array itself
    with its own size, ``{...},58]junk``, is not one JSON document and must not pass."""
    closing = [
        _padded_to_its_size(lambda n: _ONE_EVENT + b",%d]junk" % n),
        _padded_to_its_size(lambda n: _ONE_EVENT + b" ,\n %d \t]" % n),
        _padded_to_its_size(lambda n: b"  " + _ONE_EVENT + b",%d]{[ \\" % n),
        # Text that casts to the size closes it as well.
        _padded_to_its_size(lambda n: _ONE_EVENT + b',"%d"]' % n),
        _padded_to_its_size(lambda n: _ONE_EVENT + b",%d.0]" % n),
        _padded_to_its_size(lambda n: _ONE_EVENT + b",%d0e-1]" % n),
    ]
    # One document that holds ",<its size>]" itself is fine.
    holding = _padded_to_its_size(lambda n: _ONE_EVENT[:-1] + b',"n":[1,%d]}' % n)
    parsed = _parse(_kafka_frame(spark, [*closing, holding]))
    rows = parsed.orderBy("offset").select(
        F.length("value"), "malformed_reason", F.unix_millis("event_time")
    )
    assert [tuple(row) for row in rows.collect()] == [
        *((len(value), "value is not valid JSON", None) for value in closing),
        (len(holding), None, BASE_MS),
    ]


# -- Every record exactly once ----------------------------------------------------------


def test_a_mixed_batch_yields_every_record_exactly_once(spark: SparkSession) -> None:
    values = [value for _, value, _ in MALFORMED] + [value for _, value, _ in VALID]
    raw = _kafka_frame(spark, values, partition=0).unionByName(
        _kafka_frame(spark, list(reversed(values)), partition=1)
    )
    parsed = _parse(raw)
    good = valid_events(parsed).select("partition", "offset").collect()
    bad = quarantine_records(parsed).select("partition", "offset").collect()
    assert (len(good), len(bad)) == (2 * len(VALID), 2 * len(MALFORMED))
    positions = [(row.partition, row.offset) for row in [*good, *bad]]
    assert sorted(positions) == [(p, o) for p in (0, 1) for o in range(len(values))]


def test_quarantine_keeps_the_raw_record_and_the_reason(spark: SparkSession) -> None:
    raw = _kafka_frame(spark, [b"\xff{", _event()], partition=2, timestamps_ms=[KAFKA_MS, 5])
    quarantined = quarantine_records(_parse(raw))
    assert quarantined.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "reason",
    ]
    rows = quarantined.select(
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        F.unix_millis("timestamp"),
        "timestampType",
        "reason",
    ).collect()
    assert [tuple(row) for row in rows] == [
        (
            bytearray(b"0"),
            bytearray(b"\xff{"),
            "page-views",
            2,
            0,
            KAFKA_MS,
            0,
            "value is not valid UTF-8",
        )
    ]


# -- Event time from Kafka --------------------------------------------------------------


def test_kafka_time_source_uses_the_record_timestamp(spark: SparkSession) -> None:
    values = [
        _event(),
        _event(event_time=_ABSENT),
        _event(event_time="abc"),  # not read at all
        _event(event_time=_ABSENT),
        _event(article_id=5),
    ]
    stamps = [KAFKA_MS, KAFKA_MS + 1, KAFKA_MS + 2, None, KAFKA_MS]
    parsed = _parse(_kafka_frame(spark, values, timestamps_ms=stamps), time_source="kafka")
    rows = parsed.orderBy("offset").select(
        "article_id", F.unix_millis("event_time"), "malformed_reason"
    )
    assert [tuple(row) for row in rows.collect()] == [
        ("a1", KAFKA_MS, None),
        ("a1", KAFKA_MS + 1, None),
        ("a1", KAFKA_MS + 2, None),
        (None, None, "Kafka timestamp is null"),
        (None, None, "field 'article_id' is not a string"),
    ]
    assert valid_events(parsed).columns == [
        "article_id",
        "user_id",
        "event_time",
        "topic",
        "partition",
        "offset",
    ]


def test_parse_by_takes_the_rules_from_a_recipe_or_verify_s_parsing(spark: SparkSession) -> None:
    rules = Parsing(events=EVENTS, time_source="kafka", time_field="event_time", max_value_bytes=20)
    raw = _kafka_frame(spark, [_event(event_time=_ABSENT), b'{"article_id":"a2"}'])
    rows = parse_by(raw, rules).orderBy("offset").select("article_id", "malformed_reason")
    assert [tuple(row) for row in rows.collect()] == [
        (None, f"value is {len(_event(event_time=_ABSENT))} bytes, over the 20-byte limit"),
        ("a2", None),
    ]


# -- A team's own schema ----------------------------------------------------------------

TYPED_EVENTS = (
    EventField("ts", "timestamp", required=True),
    EventField("count", "int"),
    EventField("bytes", "bigint"),
    EventField("ratio", "double"),
    EventField("bot", "boolean"),
)


def test_declared_types_are_checked_strictly(spark: SparkSession) -> None:
    ts = "2026-11-22T10:15:00Z"
    values = [
        json.dumps({"ts": ts, "count": 3, "bytes": 2**40, "ratio": 1, "bot": False}),
        json.dumps({"ts": ts, "ratio": 0.25}),
        json.dumps({"ts": ts, "count": 1.5}),
        json.dumps({"ts": ts, "count": 2**31}),
        json.dumps({"ts": ts, "count": "3"}),
        json.dumps({"ts": ts, "bytes": 2**63}),
        json.dumps({"ts": ts, "ratio": "0.5"}),
        json.dumps({"ts": ts, "bot": 1}),
        json.dumps({"ts": ts, "bot": "true"}),
    ]
    parsed = _parse(
        _kafka_frame(spark, [value.encode() for value in values]),
        time_field="ts",
        events=TYPED_EVENTS,
    )
    assert parsed.columns[-6:] == [
        "count",
        "bytes",
        "ratio",
        "bot",
        "event_time",
        "malformed_reason",
    ]
    rows = parsed.orderBy("offset").select("count", "bytes", "ratio", "bot", "malformed_reason")
    assert [tuple(row) for row in rows.collect()] == [
        (3, 2**40, 1.0, False, None),
        (None, None, 0.25, None, None),
        (None, None, None, None, "field 'count' is not a 32-bit integer"),
        (None, None, None, None, "field 'count' is not a 32-bit integer"),
        (None, None, None, None, "field 'count' is not a 32-bit integer"),
        (None, None, None, None, "field 'bytes' is not a 64-bit integer"),
        (None, None, None, None, "field 'ratio' is not a number"),
        (None, None, None, None, "field 'bot' is not a boolean"),
        (None, None, None, None, "field 'bot' is not a boolean"),
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"time_source": "header"}, "time_source 'header' must be 'payload' or 'kafka'"),
        ({"time_field": "ts"}, "time_field 'ts' is not a field of the event schema"),
        ({"time_field": "user_id"}, "time_field 'user_id' must be declared as a timestamp"),
        (
            {"time_source": "kafka", "time_field": "ts"},
            "event field 'event_time' would clash with the event time column",
        ),
        # An unsupported type is refused where it is declared: see test_project.py.
        (
            {"events": (EventField("offset", "bigint"),), "time_source": "kafka"},
            "event fields ['offset'] clash with the Kafka columns",
        ),
    ],
)
def test_parse_events_refuses_a_configuration_it_cannot_honour(
    spark: SparkSession, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidValueError) as caught:
        _parse(_kafka_frame(spark, []), **options)
    assert str(caught.value).startswith(message)


# -- Per-batch metrics ------------------------------------------------------------------


def test_observe_batch_metrics_counts_rows_and_the_valid_event_time_range(
    spark: SparkSession,
) -> None:
    values = [
        _event(event_time="2026-11-22T10:15:00.250Z"),
        b"{",
        _event(event_time="2026-11-22T10:14:59.000001Z"),
        None,
        _event(event_time="2026-11-22T10:15:07Z"),
    ]
    observation = Observation("test_batch_metrics")
    observed = observe_batch_metrics(_parse(_kafka_frame(spark, values)), observation)
    assert observed.count() == len(values)
    assert observation.get == {
        INPUT_ROWS: 5,
        MALFORMED_ROWS: 2,
        MIN_EVENT_TIME_US: GOOD_US - 1_249_999,
        MAX_EVENT_TIME_US: GOOD_US + 6_750_000,
    }


def test_metrics_have_no_event_time_when_nothing_is_valid(spark: SparkSession) -> None:
    parsed = _parse(_kafka_frame(spark, [b"[]", None]))
    row = parsed.agg(*batch_metric_columns()).collect()[0]
    assert row.asDict() == {
        INPUT_ROWS: 2,
        MALFORMED_ROWS: 2,
        MIN_EVENT_TIME_US: None,
        MAX_EVENT_TIME_US: None,
    }
    assert dict(parsed.agg(*batch_metric_columns()).dtypes) == {
        INPUT_ROWS: "bigint",
        MALFORMED_ROWS: "bigint",
        MIN_EVENT_TIME_US: "bigint",
        MAX_EVENT_TIME_US: "bigint",
    }
    assert BATCH_METRICS == "batch_metrics"


# -- Windowed aggregation ---------------------------------------------------------------

METRICS = [
    parse_metric("views", "count(*)"),
    parse_metric("users", "approx_count_distinct(user_id)"),
    parse_metric("with_user", "count(user_id)"),
    parse_metric("total_s", "sum(seconds)"),
    parse_metric("shortest_s", "min(seconds)"),
    parse_metric("longest_s", "max(seconds)"),
    parse_metric("mean_s", "avg(seconds)"),
]
TUMBLING = WindowSpec(duration_ms=10_000, slide_ms=10_000, watermark_delay_ms=0)
SLIDING = WindowSpec(duration_ms=10_000, slide_ms=5_000, watermark_delay_ms=0)


def _events(spark: SparkSession, rows: Sequence[tuple[str, str | None, int, int]]) -> DataFrame:
    """Events as valid_events gives them, plus a numeric column; times in ms after BASE_MS."""
    frame = spark.createDataFrame(
        rows, "article_id string, user_id string, after_ms long, seconds long"
    )
    return frame.select(
        "article_id",
        "user_id",
        F.timestamp_millis(F.col("after_ms") + BASE_MS).alias("event_time"),
        "seconds",
        F.lit("page-views").alias("topic"),
        F.lit(0).alias("partition"),
        F.col("after_ms").alias("offset"),
    )


def _windows(aggregates: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """Rows as (start, end) in ms after BASE_MS, then the given columns, sorted."""
    rows = aggregates.select(
        (F.unix_millis("window_start") - BASE_MS).alias("start"),
        (F.unix_millis("window_end") - BASE_MS).alias("end"),
        *columns,
    ).collect()
    return sorted(tuple(row) for row in rows)


PAGE_VIEWS = [
    ("a", "u1", 0, 10),
    ("a", "u2", 9_999, 20),
    ("a", "u1", 10_000, 30),
    ("b", None, 4_000, 40),
    ("b", "u3", 12_000, 50),
]


def test_tumbling_windows_compute_every_metric_function(spark: SparkSession) -> None:
    aggregates = windowed_aggregates(
        _events(spark, PAGE_VIEWS), window=TUMBLING, keys=["article_id"], metrics=METRICS
    )
    assert aggregates.columns == [
        "window_start",
        "window_end",
        "article_id",
        *(metric.name for metric in METRICS),
    ]
    assert _windows(aggregates, "article_id", *(metric.name for metric in METRICS)) == [
        (0, 10_000, "a", 2, 2, 2, 30, 10, 20, 15.0),
        (0, 10_000, "b", 1, 0, 0, 40, 40, 40, 40.0),
        (10_000, 20_000, "a", 1, 1, 1, 30, 30, 30, 30.0),
        (10_000, 20_000, "b", 1, 1, 1, 50, 50, 50, 50.0),
    ]


def test_sliding_windows_count_an_event_in_each_of_its_windows(spark: SparkSession) -> None:
    aggregates = windowed_aggregates(
        _events(spark, PAGE_VIEWS),
        window=SLIDING,
        keys=[],
        metrics=[parse_metric("views", "count(*)"), parse_metric("total_s", "sum(seconds)")],
    )
    assert aggregates.columns == ["window_start", "window_end", "views", "total_s"]
    assert _windows(aggregates, "views", "total_s") == [
        (-5_000, 5_000, 2, 50),
        (0, 10_000, 3, 70),
        (5_000, 15_000, 3, 100),
        (10_000, 20_000, 2, 80),
    ]


def test_metrics_come_out_in_the_configured_order(spark: SparkSession) -> None:
    metrics = [parse_metric("z_last", "max(seconds)"), parse_metric("a_first", "count(*)")]
    aggregates = windowed_aggregates(
        _events(spark, PAGE_VIEWS), window=TUMBLING, keys=["user_id", "article_id"], metrics=metrics
    )
    assert aggregates.columns == [
        "window_start",
        "window_end",
        "user_id",
        "article_id",
        "z_last",
        "a_first",
    ]


def test_replay_filter_drops_windows_ending_at_or_before_w(spark: SparkSession) -> None:
    aggregates = windowed_aggregates(
        _events(spark, PAGE_VIEWS),
        window=TUMBLING,
        keys=["article_id"],
        metrics=[parse_metric("views", "count(*)")],
        replay_after_ms=BASE_MS + 10_000,
    )
    # The windows [0, 10 s) end exactly at W: written before the restart, so not again.
    assert _windows(aggregates, "article_id", "views") == [
        (10_000, 20_000, "a", 1),
        (10_000, 20_000, "b", 1),
    ]


def test_replay_filter_is_exact_to_the_millisecond(spark: SparkSession) -> None:
    aggregates = windowed_aggregates(
        _events(spark, PAGE_VIEWS),
        window=TUMBLING,
        keys=[],
        metrics=[parse_metric("views", "count(*)")],
        replay_after_ms=BASE_MS + 9_999,
    )
    assert _windows(aggregates, "views") == [(0, 10_000, 3), (10_000, 20_000, 2)]


def test_replay_filter_keeps_an_events_open_sliding_windows(spark: SparkSession) -> None:
    events = _events(spark, [("a", "u1", 7_000, 1), ("a", "u2", 12_000, 2)])
    aggregates = windowed_aggregates(
        events,
        window=SLIDING,
        keys=["article_id"],
        metrics=[parse_metric("views", "count(*)"), parse_metric("total_s", "sum(seconds)")],
        replay_after_ms=BASE_MS + 10_000,
    )
    # The event at 7 s loses only its window [0, 10 s); it still counts in [5 s, 15 s).
    assert _windows(aggregates, "article_id", "views", "total_s") == [
        (5_000, 15_000, "a", 2, 3),
        (10_000, 20_000, "a", 1, 2),
    ]


def test_unknown_key_is_refused_with_the_available_columns(spark: SparkSession) -> None:
    with pytest.raises(UnknownColumnError) as caught:
        windowed_aggregates(
            _events(spark, []), window=TUMBLING, keys=["country"], metrics=METRICS[:1]
        )
    assert isinstance(caught.value, InvalidValueError)
    assert caught.value.field == "keys"
    assert str(caught.value) == (
        "grouping key 'country' is not a column of the events; available: "
        "article_id, user_id, event_time, seconds, topic, partition, offset"
    )


def test_unknown_metric_column_is_refused_with_the_available_columns(spark: SparkSession) -> None:
    with pytest.raises(UnknownColumnError) as caught:
        windowed_aggregates(
            _events(spark, []),
            window=TUMBLING,
            keys=["article_id"],
            metrics=[parse_metric("spent", "sum(duration_ms)")],
        )
    assert caught.value.field == "metrics"
    assert str(caught.value) == (
        "metric spent = sum(duration_ms): 'duration_ms' is not a column of the events; "
        "available: article_id, user_id, event_time, seconds, topic, partition, offset"
    )


def test_an_output_column_named_twice_is_refused(spark: SparkSession) -> None:
    with pytest.raises(InvalidValueError, match=r"output columns \['window_end'\]"):
        windowed_aggregates(
            _events(spark, []),
            window=TUMBLING,
            keys=[],
            metrics=[MetricSpec(name="window_end", function="max", column="seconds")],
        )


def test_aggregate_schema_is_what_spark_derives(spark: SparkSession) -> None:
    expected = [
        ("window_start", "timestamp"),
        ("window_end", "timestamp"),
        ("article_id", "string"),
        ("views", "bigint"),
        ("users", "bigint"),
        ("with_user", "bigint"),
        ("total_s", "bigint"),
        ("shortest_s", "bigint"),
        ("longest_s", "bigint"),
        ("mean_s", "double"),
    ]
    events = _events(spark, [])
    assert aggregate_schema(events, ["article_id"], METRICS) == expected
    assert aggregate_schema(events.schema, ["article_id"], METRICS) == expected
    parsed = valid_events(_parse(_kafka_frame(spark, [])))
    assert aggregate_schema(parsed, ["article_id"], METRICS[:3]) == expected[:6]


# -- Streaming --------------------------------------------------------------------------


def test_streaming_append_mode_accepts_the_replay_filter(
    spark: SparkSession, tmp_path: Path
) -> None:
    kafka_schema = spark_schema(include_headers=False)
    stamp = _utc(KAFKA_MS)

    def record(offset: int, value: bytes) -> tuple[Any, ...]:
        return (None, value, "page-views", 0, offset, stamp, 0)

    def at(seconds: int) -> str:
        return _utc(BASE_MS + seconds * 1_000).isoformat().replace("+00:00", "Z")

    events = [
        _event(article_id="a", event_time=at(1)),  # in [0, 10 s): written before W
        _event(article_id="a", event_time=at(12)),
        b"not json",
        _event(article_id="b", event_time=at(15)),
        _event(article_id="a", event_time=at(25)),  # moves the watermark to 25 s
    ]
    source = tmp_path / "kafka"
    rows = [record(offset, value) for offset, value in enumerate(events)]
    spark.createDataFrame(rows, kafka_schema).coalesce(1).write.parquet(str(source))

    raw = spark.readStream.schema(kafka_schema).parquet(str(source))
    parsed = observe_batch_metrics(_parse(raw))
    aggregates = windowed_aggregates(
        valid_events(parsed),
        window=TUMBLING,
        keys=["article_id"],
        metrics=[parse_metric("views", "count(*)")],
        replay_after_ms=BASE_MS + 10_000,
    )
    query = (
        aggregates.writeStream.outputMode("append")
        .format("memory")
        .queryName("replayed_aggregates")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(timeout=60), "the AvailableNow query did not finish in 60 s"
        assert query.exception() is None
        output = spark.table("replayed_aggregates")
        # [20 s, 30 s) is still open; [0, 10 s) is dropped by the replay filter.
        assert _windows(output, "article_id", "views") == [
            (10_000, 20_000, "a", 1),
            (10_000, 20_000, "b", 1),
        ]
        first = query.recentProgress[0]
        assert first.observedMetrics[BATCH_METRICS].asDict() == {
            INPUT_ROWS: 5,
            MALFORMED_ROWS: 1,
            MIN_EVENT_TIME_US: (BASE_MS + 1_000) * 1_000,
            MAX_EVENT_TIME_US: (BASE_MS + 25_000) * 1_000,
        }
    finally:
        query.stop()
        spark.catalog.dropTempView("replayed_aggregates")
