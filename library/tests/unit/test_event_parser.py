"""``event_parser`` against ``parse_events`` itself: Spark's answer, record by record.

Each Spark test builds one static frame of Kafka rows and runs ``parse_events`` once, then
asks the mirror about every row: its (reason, event time) must equal Spark's
(``malformed_reason``, ``unix_micros(event_time)``) unless it says it is unsure. The
hand-written edges and the behaviours pinned down against Spark must never be unsure; the
hypothesis corpora (valid events, type variations, random timestamps, byte mutations) may
be, but only rarely. Tests without Spark check the calendar against ``datetime`` and that no
input makes the mirror raise.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pyspark_kafka_upgrade.example.events import EVENTS as PAGE_VIEW_EVENTS
from pyspark_kafka_upgrade.kafka.schema import (
    spark_schema,
)
from pyspark_kafka_upgrade.model.scans import UNSURE, Unsure
from pyspark_kafka_upgrade.query.columns import (
    EVENT_TIME,
    MALFORMED_REASON,
)
from pyspark_kafka_upgrade.query.event_parser import EventParser, ParsedRecord
from pyspark_kafka_upgrade.spark.parsing import (
    parse_events,
)
from pyspark_kafka_upgrade.values.project import EventField, EventType
from pyspark_kafka_upgrade.values.validation import (
    InvalidValueError,
)

LIMIT = 262_144
# Hypothesis examples per generated corpus: 1-10 records each, all checked in one Spark job.
GENERATED_EXAMPLES = 300
KAFKA_US = 1_795_000_000_123_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# One field of each supported type, required and nullable.
_TYPE_PREFIXES: tuple[tuple[str, EventType], ...] = (
    ("s", "string"),
    ("b", "boolean"),
    ("i", "int"),
    ("l", "bigint"),
    ("d", "double"),
    ("t", "timestamp"),
)
TYPED_EVENTS = tuple(
    EventField(f"{name}_{kind}", type_, required=kind == "req")
    for name, type_ in _TYPE_PREFIXES
    for kind in ("req", "opt")
)

Record = tuple[bytes | None, int | None]
Answer = tuple[str | None, int | None]


@dataclass(frozen=True)
class Config:
    name: str
    events: tuple[EventField, ...]
    time_source: str
    time_field: str
    max_value_bytes: int = LIMIT

    def parser(self) -> EventParser:
        return EventParser(
            time_source=self.time_source,
            time_field=self.time_field,
            max_value_bytes=self.max_value_bytes,
            events=self.events,
        )


EVENTS = Config("events", PAGE_VIEW_EVENTS, "payload", "event_time")
EVENTS_KAFKA = Config("events-kafka", PAGE_VIEW_EVENTS, "kafka", "event_time")
TYPED = Config("typed", TYPED_EVENTS, "payload", "t_req")
TYPED_KAFKA = Config("typed-kafka", TYPED_EVENTS, "kafka", "t_req")
TYPED_OPTIONAL_TIME = Config("typed-optional-time", TYPED_EVENTS, "payload", "t_opt")
CONFIGS = (EVENTS, EVENTS_KAFKA, TYPED, TYPED_KAFKA, TYPED_OPTIONAL_TIME)


def _spark_answers(spark: SparkSession, config: Config, records: Sequence[Record]) -> list[Answer]:
    """One ``parse_events`` job over Kafka rows with offsets 0..n-1."""
    rows = [
        (
            str(offset).encode(),
            value,
            "page-views",
            0,
            offset,
            None if stamp is None else _EPOCH + timedelta(microseconds=stamp),
            0,
        )
        for offset, (value, stamp) in enumerate(records)
    ]
    raw = spark.createDataFrame(rows, spark_schema(include_headers=False))
    parsed = parse_events(
        raw,
        time_source="kafka" if config.time_source == "kafka" else "payload",
        time_field=config.time_field,
        max_value_bytes=config.max_value_bytes,
        events=config.events,
    )
    collected = parsed.select(
        "offset", MALFORMED_REASON, F.unix_micros(EVENT_TIME).alias("us")
    ).collect()
    answers = {row.offset: (row[MALFORMED_REASON], row.us) for row in collected}
    assert sorted(answers) == list(range(len(records)))
    return [answers[offset] for offset in range(len(records))]


def _show(value: bytes | None) -> str:
    if value is None or len(value) <= 160:
        return repr(value)
    return f"{value[:100]!r}...{value[-40:]!r} ({len(value)} bytes)"


def _compare(
    config: Config, records: Sequence[Record], answers: Sequence[Answer]
) -> tuple[list[str], list[int]]:
    """(mismatches, offsets the mirror is unsure of); checks event_time_ms along the way."""
    parser = config.parser()
    problems: list[str] = []
    unsure: list[int] = []
    for offset, ((value, stamp), expected) in enumerate(zip(records, answers, strict=True)):
        mine = parser.parse(value, stamp)
        millis = parser.event_time_ms(value, stamp)
        if mine.unsure is not None:
            unsure.append(offset)
            if (mine.reason, mine.event_time_us) != (None, None) or millis is not UNSURE:
                problems.append(f"#{offset} {_show(value)}: unsure, yet {mine} / {millis}")
            continue
        if (mine.reason, mine.event_time_us) != expected:
            problems.append(
                f"#{offset} {_show(value)} ts={stamp}: spark {expected}, "
                f"mirror {(mine.reason, mine.event_time_us)}"
            )
        reason, micros = expected
        expected_ms = None if reason is not None or micros is None else micros // 1000
        if mine.limit is not None:
            # Malformed only by a limit of Spark's parser: a scan must take it as unsure.
            if millis is not UNSURE:
                problems.append(f"#{offset} {_show(value)}: {mine.limit}, yet {millis}")
        elif millis != expected_ms:
            problems.append(f"#{offset} {_show(value)}: event_time_ms {millis} != {expected_ms}")
    return problems, unsure


def _assert_mirrors(
    spark: SparkSession, config: Config, records: Sequence[Record], *, unsure_allowed: float = 0
) -> list[Answer]:
    """Spark's answers, once the mirror was found to give the same (or to be unsure)."""
    answers = _spark_answers(spark, config, records)
    problems, unsure = _compare(config, records, answers)
    assert not problems, f"{len(problems)} of {len(records)} differ:\n" + "\n".join(problems[:25])
    assert len(unsure) <= unsure_allowed * len(records), (
        f"unsure of {len(unsure)} of {len(records)} records: "
        + ", ".join(_show(records[offset][0]) for offset in unsure[:10])
    )
    return answers


def _payload(values: Sequence[bytes | None]) -> list[Record]:
    return [(value, KAFKA_US) for value in values]


# -- Hand-written edges ---------------------------------------------------------------------


def _event(time: str = "2026-11-22T10:15:00.250Z", **extra: str) -> bytes:
    """A page-view event (example.events.EVENTS); ``extra`` maps more keys to raw JSON text."""
    members = ['"article_id":"a1"', '"user_id":"u1"', f'"event_time":"{time}"']
    members += [f"{json.dumps(key)}:{text}" for key, text in extra.items()]
    return ("{" + ",".join(members) + "}").encode()


GOOD = _event()

TIMESTAMPS = [
    "2026-11-22T10:15:00Z",
    "2026-11-22T10:15:00",
    *(f"2026-11-22T10:15:00.{'123456789'[:digits]}Z" for digits in range(1, 10)),
    "2026-11-22T10:15:00.1234567891Z",
    "2026-11-22T10:15:00.Z",
    "0000-01-01T00:00:00Z",
    "0000-01-01T00:00:00+01:00",
    "0000-02-29T12:00:00Z",
    "0001-01-01T00:00:00Z",
    "0100-02-29T00:00:00Z",
    "1582-10-10T00:00:00Z",
    "1900-02-29T00:00:00Z",
    "1969-12-31T23:59:59.9999995Z",
    "1970-01-01T00:00:00Z",
    "2000-02-29T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2024-02-29T00:00:00Z",
    "2024-02-30T00:00:00Z",
    "2024-04-31T00:00:00Z",
    "2024-12-31T23:59:59.999999Z",
    "2024-00-10T00:00:00Z",
    "2024-13-10T00:00:00Z",
    "2024-01-00T00:00:00Z",
    "2024-01-32T00:00:00Z",
    "2024-01-01T24:00:00Z",
    "2024-01-01T23:60:00Z",
    "2024-01-01T23:59:60Z",
    "9999-12-31T23:59:59.999999999Z",
    "9999-12-31T23:59:59-18:00",
    *(
        f"2024-06-01T12:00:00{offset}"
        for offset in (
            "+00:00",
            "-00:00",
            "+05:30",
            "-14:30",
            "+14:00",
            "+17:59",
            "+18:00",
            "-18:00",
            "+18:01",
            "-18:01",
            "+19:00",
            "+05:60",
            "+00:99",
            "+0530",
            "+05",
            "+05:30:00",
            "z",
            " Z",
            "UTC",
        )
    ),
    "2024-06-01t12:00:00Z",
    "2024-06-01 12:00:00Z",
    "2024-6-01T12:00:00Z",
    "12345-06-01T12:00:00Z",
    "2024-06-01",
    "T12:00:00",
    "",
    "\\u0032024-06-01T12:00:00Z",
    "2024-06-01T12:00:00Z\\u0000",
]

ORDINARY = [
    None,
    b"",
    GOOD,
    b" \t\r\n" + GOOD + b" \t\r\n",
    b"\x0c" + GOOD,
    GOOD + b"\x0b",
    GOOD + b"\x00",
    b"\xc2\xa0" + GOOD,
    b"\xef\xbb\xbf" + GOOD,
    GOOD + b" junk",
    GOOD + b"\n" + GOOD,
    GOOD + b"," + GOOD,
    b'{"a":1} junk',
    b'{"a":1}}',
    GOOD[:-1],
    GOOD[1:],
    b"{",
    b"}",
    b"{}",
    b" {}",
    b"{} ",
    b"[]",
    b"[" + GOOD + b"]",
    b"1",
    b"-0",
    b'"text"',
    b"null",
    b"true",
    b"x",
    b" ",
    b"\x00",
    b"\xff",
    b"\xfe\xff",
    b"\xc0\x80",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b'{"article_id":"\xff","event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"\xf0\x9f\x98\x80","event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a\x01b","event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a\x1fb","event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a\x7fb","event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a\\u0001b","event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a\\/b","event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a\\qb","event_time":"2024-01-01T00:00:00Z"}',
    b"{'article_id':'a','event_time':'2024-01-01T00:00:00Z'}",
    b'{"article_id":"a","event_time":"2024-01-01T00:00:00Z",}',
    b'{"article_id":"a" "event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a","event_time":"2024-01-01T00:00:00Z" /* c */}',
    b'{article_id:"a","event_time":"2024-01-01T00:00:00Z"}',
    *(
        _event(x=number)
        for number in (
            "01",
            "1.",
            ".5",
            "+1",
            "1e",
            "1e+",
            "-",
            "--1",
            "1.0",
            "-0",
            "-0.0",
            "1e2",
            "1E+2",
            "1e-2",
            "0x10",
            "1_000",
            "123456789012345678901234567890123456789012345",
            "1e400",
            "tru",
            "True",
            "nul",
            "[1,]",
            "[,1]",
            "{}",
            '{"":1}',
        )
    ),
    b'{"user_id":"u1","event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":null,"event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a","event_time":null}',
    b'{"article_id":"a"}',
    b'{"article_id":"a","user_id":null,"event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a","user_id":7,"event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":1,"event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":["a"],"event_time":"2024-01-01T00:00:00Z"}',
    b'{"article_id":"a","event_time":1795000000}',
    b'{"article_id":"a","event_time":{"t":"2024-01-01T00:00:00Z"}}',
    b'{"Article_Id":"a","event_time":"2024-01-01T00:00:00Z"}',
    *(_event(time) for time in TIMESTAMPS),
    b"x" * LIMIT,
    b"x" * (LIMIT + 1),
    b"\xff" * (LIMIT + 1),
    _event(x='"' + "p" * (LIMIT - len(_event(x='""'))) + '"'),
    _event(x='"' + "p" * (LIMIT + 1 - len(_event(x='""'))) + '"'),
]

TYPED_LITERALS = [
    '"x"',
    '""',
    '"1"',
    '"true"',
    '"2024-01-01T00:00:00Z"',
    "true",
    "false",
    "null",
    "0",
    "-0",
    "1",
    "-1",
    str(2**31 - 1),
    str(2**31),
    str(-(2**31)),
    str(-(2**31) - 1),
    str(2**63 - 1),
    str(2**63),
    str(-(2**63)),
    str(-(2**63) - 1),
    "1.0",
    "-0.0",
    "1e2",
    "1E2",
    "1.5",
    "0.1",
    "9" * 38,
    "9" * 39,
    "1" * 38 + ".5",
    "0." + "1" * 40,
    "1e400",
    "-1e-400",
    "[]",
    "{}",
    "[1]",
    '{"a":1}',
]
_VALID = {
    "s": '"x"',
    "b": "true",
    "i": "1",
    "l": "1",
    "d": "1.5",
    "t": '"2024-01-01T00:00:00Z"',
}


def _typed(**fields: str | None) -> bytes:
    """A TYPED_EVENTS record: every field valid unless given; None leaves it out."""
    members: dict[str, str | None] = {
        f"{name}_{kind}": text for name, text in _VALID.items() for kind in ("req", "opt")
    }
    members.update(fields)
    body = ",".join(f'"{key}":{text}' for key, text in members.items() if text is not None)
    return ("{" + body + "}").encode()


TYPED_EDGES = [
    _typed(),
    *(
        _typed(**{f"{name}_{kind}": literal})
        for name in _VALID
        for kind in ("req", "opt")
        for literal in TYPED_LITERALS
    ),
    *(_typed(**{field.name: None}) for field in TYPED_EVENTS),
    _typed(**{field.name: None for field in TYPED_EVENTS}),
    _typed(**{field.name: "null" for field in TYPED_EVENTS if not field.required}),
    _typed(s_req="1", t_req="5"),
    b"{}",
    b"[]",
    b"",
    None,
]


def test_hand_written_edges_of_the_event_schema(spark: SparkSession) -> None:
    _assert_mirrors(spark, EVENTS, _payload(ORDINARY))


@pytest.mark.parametrize("config", [TYPED, TYPED_OPTIONAL_TIME], ids=lambda c: c.name)
def test_hand_written_edges_of_each_type(spark: SparkSession, config: Config) -> None:
    _assert_mirrors(spark, config, _payload(TYPED_EDGES))


KAFKA_STAMPS = [KAFKA_US, None, 0, -1, -123_456_789, 253_402_300_799_999_999]


@pytest.mark.parametrize("config", [EVENTS_KAFKA, TYPED_KAFKA], ids=lambda c: c.name)
def test_hand_written_edges_with_kafka_time(spark: SparkSession, config: Config) -> None:
    values = [*ORDINARY[:20], *TYPED_EDGES[:: len(TYPED_LITERALS) // 3], b'{"article_id":"a"}']
    records = [(value, stamp) for value in values for stamp in KAFKA_STAMPS]
    _assert_mirrors(spark, config, records)


# -- Behaviours pinned down against Spark ----------------------------------------------------


def _closing_early(prefix: str, second: Callable[[int], str], tail: str = "") -> bytes:
    """``prefix,<second(n)>]`` + ``tail``, padded to n bytes: Spark's wrapper closes early."""
    for size in itertools.count(len(prefix) + 3):
        text = f"{prefix},{second(size)}]{tail}".encode()
        if len(text) <= size:
            return text + b" " * (size - len(text))
    raise AssertionError("unreachable")


def _colliding_keys(count: int) -> list[str]:
    """Distinct names of one length with one Jackson hash: "Aa" and "B@" hash alike (x33)."""
    blocks = itertools.product(["Aa", "B@"], repeat=max(1, (count - 1).bit_length()))
    return ["".join(block) for block in itertools.islice(blocks, count)]


_PREFIX = '{"article_id":"a1","event_time":"2026-11-22T10:15:00Z"}'

PINNED = [
    # Literals Jackson refuses by default.
    *(_event(x=literal) for literal in ("NaN", "Infinity", "-Infinity", "nan", "inf", "-NaN")),
    # Duplicate keys, at any depth, equal once unescaped; the same key in two objects is fine.
    _event(article_id='"a2"'),
    _event(x='{"y":1,"y":2}'),
    _event(x='[{"y":1},{"y":1,"y":1}]'),
    _event(x='{"y":1}', z='{"y":1}'),
    b'{"article_id":"a1","\\u0061rticle_id":"a2","event_time":"2026-11-22T10:15:00Z"}',
    b'{"article_id":"a1","event_time":"2026-11-22T10:15:00Z","a":1,"\\u0041":2}',
    # Lone surrogate escapes, in values and keys; pairs and escaped backslashes are fine.
    *(
        _event(x=f'"{text}"')
        for text in (
            "\\ud800",
            "\\uDC00",
            "\\udc00\\ud800",
            "\\ud800x",
            "\\ud800\\u0041",
            "a\\udbff",
            "\\ud83d\\ude00",
            "\\uD83D\\uDE00",
            "\\\\ud800",
        )
    ),
    b'{"article_id":"a1","event_time":"2026-11-22T10:15:00Z","\\ud800":1}',
    b'{"article_id":"a1","event_time":"2026-11-22T10:15:00Z","\\ud83d\\ude00":1}',
    b'{"article_id":"\\ud800","event_time":"2026-11-22T10:15:00Z"}',
    b'{"article_id":"a1","event_time":"2026-11-22T10:15:00\\udc00"}',
    # Spark's wrapper closes inside the value: the second element decides, cast to bigint.
    _closing_early(_PREFIX, str),
    _closing_early(_PREFIX, str, "junk"),
    # Three opening braces, built up so the template engine that bakes this file leaves it be.
    _closing_early(_PREFIX, str, "{" * 3 + " \\"),
    _closing_early(" " + _PREFIX, str),
    _closing_early(_PREFIX.replace('"a1"', '"a1","article_id":"a2"'), str),
    _closing_early(_PREFIX.replace('"a1"', "1"), str),
    _closing_early(_PREFIX.replace("2026-11-22", "2023-02-29"), str),
    _closing_early("[1,2]", str),
    _closing_early('"text"', str),
    _closing_early("7", str),
    *(
        _closing_early(_PREFIX, second)
        for second in (
            lambda n: f'"{n}"',
            lambda n: f'" {n} "',
            lambda n: f'"\\t{n}\\n"',
            lambda n: f'"{n}\\u0000"',
            lambda n: f'"\\u001f{n}\\u007f"',
            lambda n: f'"\\u00a0{n}"',
            lambda n: f'"+{n}"',
            lambda n: f'"-{n}"',
            lambda n: f'"00{n}"',
            lambda n: f'"{n}.0"',
            lambda n: f'"{n}e0"',
            lambda n: f'"{n}L"',
            lambda n: f"{n}.0",
            lambda n: f"{n}.5",
            lambda n: f"{n}.99",
            lambda n: f"{n}." + "9" * 36,
            lambda n: f"{n}." + "9" * 40,
            lambda n: f"{n - 1}.9999",
            lambda n: f"{n}e0",
            lambda n: f"{n}.9e0",
            lambda n: f"{n}0e-1",
            lambda n: f"{n + 1}e-0",
            lambda n: f"{n},1",
            lambda n: f"{n},null",
            lambda n: f"[{n}]",
            lambda n: "true",
            lambda n: "null",
        )
    ),
    # Numbers: at most 1000 digits as Jackson counts them (0 for absent parts when the
    # number starts with 1-9, -1 when it starts with 0).
    *(
        _event(x=number)
        for number in (
            "9" * 1000,
            "9" * 1001,
            "-" + "9" * 1000,
            "-" + "9" * 1001,
            "9" * 999 + ".5",
            "9" * 1000 + ".5",
            "0." + "1" * 1000,
            "0." + "1" * 1001,
            "-0." + "1" * 1000,
            "0.1e" + "1" * 998,
            "0.1e" + "1" * 999,
            "0e" + "1" * 1000,
            "0e" + "1" * 1001,
            "1e" + "1" * 999,
            "1e-" + "1" * 1000,
            "1." + "1" * 998 + "e1",
            "1." + "1" * 998 + "e11",
            "[" + ",".join(["9" * 1000] * 3) + "]",
        )
    ),
    # Nesting: the value may be 999 deep, as Spark's wrapper adds a level.
    _event(x="[" * 997 + "]" * 997),
    _event(x="[" * 998 + "]" * 998),
    _event(x="[" * 999 + "]" * 999),
    _event(x='{"a":' * 998 + "1" + "}" * 998),
    _event(x='{"a":' * 999 + "1" + "}" * 999),
    _event(x="[" * 2000 + "]" * 2000),
    _event(x="[" * 2000),
    # Keys: at most 50,000 UTF-16 units once unescaped; string values are not limited so.
    _event(**{"k" * 50_000: "1"}),
    _event(**{"k" * 50_001: "1"}),
    _event(**{"\U0001f600" * 25_000: "1"}),
    _event(**{"\U0001f600" * 24_999 + "kk": "1"}),
    _event(**{"\U0001f600" * 25_000 + "k": "1"}),
    _event(**{"é" * 50_001: "1"}),
    ("{" + '"' + "\\u006b" * 50_001 + '":1,' + _PREFIX[1:]).encode(),
    ("{" + '"' + "\\u006b" * 50_000 + '":1,' + _PREFIX[1:]).encode(),
    _event(x='"' + "v" * 60_000 + '"'),
    # Jackson's symbol table: up to 150 names of one hash are fine.
    _event(**dict.fromkeys(_colliding_keys(150), "1")),
    _event(
        **{
            key: "[" + ",".join([json.dumps({key: 1}, separators=(",", ":"))] * 2) + "]"
            for key in _colliding_keys(140)
        }
    ),
]

# Spark's answer here depends on what this mirror does not model; it must say so.
UNSURE_CASES = [
    _event(**dict.fromkeys(_colliding_keys(320), "1")),
    _event(x="9" * 1000 + ".5", pad='"' + "p" * 40_000 + '"'),
]


def test_behaviours_pinned_down_against_spark(spark: SparkSession) -> None:
    config = Config("pinned", PAGE_VIEW_EVENTS, "payload", "event_time", max_value_bytes=10**7)
    _assert_mirrors(spark, config, _payload(PINNED))


def test_the_rest_is_unsure_and_says_why() -> None:
    parser = EVENTS.parser()
    for value in UNSURE_CASES:
        parsed = parser.parse(value, KAFKA_US)
        assert parsed.reason is None and parsed.event_time_us is None, _show(value)
        assert parsed.unsure, _show(value)
        assert parser.event_time_ms(value, KAFKA_US) is UNSURE
    assert isinstance(UNSURE, Unsure) and repr(UNSURE) == "UNSURE"


def test_strings_may_be_20_million_utf16_units(spark: SparkSession) -> None:
    config = Config("huge", PAGE_VIEW_EVENTS, "payload", "event_time", max_value_bytes=10**8)
    values = [
        _event(x='"' + "v" * 20_000_000 + '"'),
        _event(x='"' + "v" * 20_000_001 + '"'),
        _event(x='"' + "v" * 19_999_999 + '\\u0076"'),
        _event(x='"' + "v" * 19_999_999 + '\\ud83d\\ude00"'),
    ]
    _assert_mirrors(spark, config, _payload(values))


# -- Generated records ---------------------------------------------------------------------

_DIGITS = "0123456789"


@st.composite
def _timestamp_texts(draw: st.DrawFn, odds: int = 3) -> str:
    """ISO-8601 shapes, mostly real instants; about 1 in ``odds`` has invalid components."""
    # Hypothesis leans toward small draws, so the rare branches sit at the top of the range.
    if draw(st.integers(0, 3 * odds)) == 3 * odds:
        return draw(st.text(alphabet="0123456789-:T.Z+ tz", max_size=30))
    wild = draw(st.integers(0, odds)) == odds
    year = draw(st.integers(0, 9999))
    month = draw(st.integers(0, 14) if wild else st.integers(1, 12))
    day = draw(st.integers(0, 32) if wild else st.integers(1, 31))
    hour = draw(st.integers(0, 25) if wild else st.integers(0, 23))
    minute = draw(st.integers(0, 61) if wild else st.integers(0, 59))
    second = draw(st.integers(0, 61) if wild else st.integers(0, 59))
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    fraction = draw(st.none() | st.text(alphabet=_DIGITS, max_size=11))
    if fraction is not None:
        text += "." + fraction
    sign = draw(st.sampled_from(["", "Z", "Z", "+", "-"]))
    if sign in ("+", "-"):
        hours = draw(st.integers(0, 20) if wild else st.integers(0, 18))
        minutes = draw(st.integers(0, 61) if wild else st.sampled_from([0, 0, 30, 45, 59]))
        sign += f"{hours:02d}:{minutes:02d}"
    return text + sign


_NUMBER_TEXTS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(
        [str(n) for base in (2**31, 2**63) for n in (base - 1, base, -base, -base - 1)]
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1.0", "-0", "-0.0", "1e2", "1E-2", "0.5e+3", "9" * 40, "1" + "0" * 25]),
)
_SCALAR_TEXTS = st.one_of(
    st.sampled_from(["null", "true", "false"]),
    _NUMBER_TEXTS,
    st.text(max_size=8).map(json.dumps),
    st.text(max_size=8).map(lambda text: json.dumps(text, ensure_ascii=False)),
    _timestamp_texts().map(json.dumps),
)
_JSON_TEXTS = st.recursive(
    _SCALAR_TEXTS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(st.text(max_size=4), inner), max_size=3).map(
            lambda pairs: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in pairs) + "}"
        ),
    ),
    max_leaves=6,
)
_WHITESPACE = st.sampled_from(["", "", "", " ", "\n", "\t ", "\r\n"])
_VALID_TEXT: dict[EventType, st.SearchStrategy[str]] = {
    "string": st.text(max_size=10).map(json.dumps),
    "boolean": st.sampled_from(["true", "false"]),
    "int": st.integers(-(2**31), 2**31 - 1).map(str),
    "bigint": st.integers(-(2**63), 2**63 - 1).map(str),
    "double": _NUMBER_TEXTS,
    "timestamp": _timestamp_texts(odds=12).map(json.dumps),
}


@st.composite
def _objects(draw: st.DrawFn, events: Sequence[EventField]) -> bytes:
    """An object over the ``events`` fields: mostly right, sometimes absent, null or mistyped."""
    members: list[tuple[str, str]] = []
    for field in events:
        choice = draw(st.integers(0, 39))
        if choice == 39:
            continue
        if choice == 38:
            text = "null"
        elif choice >= 36:
            text = draw(_JSON_TEXTS)
        else:
            text = draw(_VALID_TEXT[field.type])
        members.append((field.name, text))
    members += draw(st.lists(st.tuples(st.text(max_size=6), _JSON_TEXTS), max_size=2))
    if members and draw(st.integers(0, 19)) == 19:
        members.append(draw(st.sampled_from(members)))  # a duplicate key
    order = draw(st.permutations(members))
    space = draw(_WHITESPACE)
    body = f",{space}".join(f"{json.dumps(key)}:{space}{text}" for key, text in order)
    ascii_only = draw(st.booleans())
    text = "{" + space + body + space + "}"
    return text.encode() if ascii_only or text.isascii() else text.encode("utf-8")


_INSERTS = [
    b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b" ", b"\x00", b"\x1f", b"\xff", b"\xc3",
    b"\xed\xa0\x80", b"0", b"e", b".", b"-", b"\\u", b"\\ud800", b"NaN", b"\xef\xbb\xbf",
]  # fmt: skip


@st.composite
def _mutated(draw: st.DrawFn, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.integers(0, len(data)))
        action = draw(st.integers(0, 4))
        if action == 0:
            data[where : where + draw(st.integers(1, 4))] = b""
        elif action == 1:
            data[where:where] = draw(st.sampled_from(_INSERTS))
        elif action == 2:
            data[where : where + 1] = bytes([draw(st.integers(0, 255))])
        elif action == 3:
            del data[where:]
        else:
            data += draw(st.sampled_from([b" junk", b"}", b"]", b",1]", b"\n{}"]))
    return bytes(data)


@st.composite
def _records(draw: st.DrawFn, events: Sequence[EventField]) -> Record:
    # Mostly objects over the declared fields; hypothesis favours the low end of the range.
    pick = draw(st.integers(0, 99))
    value: bytes | None
    if pick < 60:
        value = draw(_objects(events))
    elif pick < 78:
        value = draw(_objects(events).flatmap(_mutated))
    elif pick < 88:
        value = draw(_JSON_TEXTS).encode()
    elif pick < 95:
        value = draw(st.binary(max_size=24))
    elif pick < 98:
        value = b""
    else:
        value = None
    pick = draw(st.integers(0, 9))
    stamp = (
        KAFKA_US
        if pick < 6
        else None
        if pick == 9
        else draw(st.integers(-62_135_596_800_000_000, 253_402_300_799_999_999))
    )
    return value, stamp


def _generated_corpus(events: Sequence[EventField], examples: int) -> list[Record]:
    """Records from many hypothesis examples, gathered for a single Spark job.

    One job per example would cost a second each; gathered, a mismatch is not shrunk, but
    the failure lists each differing record.
    """
    corpus: list[Record] = []

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(records=st.lists(_records(events), min_size=1, max_size=10))
    def gather(records: list[Record]) -> None:
        corpus.extend(records)

    gather()
    return corpus


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_generated_records(spark: SparkSession, config: Config) -> None:
    records = _generated_corpus(config.events, examples=GENERATED_EXAMPLES)
    answers = _assert_mirrors(spark, config, records, unsure_allowed=0.01)
    # The corpus must exercise both sides, or an exact match would prove little.
    valid = sum(reason is None for reason, _ in answers)
    assert 0.03 * len(records) <= valid <= 0.8 * len(records), (valid, len(records))
    reasons = {reason.split("'")[0] for reason, _ in answers if reason is not None}
    assert len(reasons) >= 6, reasons


def test_seeded_corpus_of_valid_events(spark: SparkSession) -> None:
    """Many valid events, the kind the planner scans: all exact, none unsure."""
    rng = random.Random(20261122)
    values = []
    for index in range(2_000):
        year, month = rng.randint(0, 9999), rng.randint(1, 12)
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        fraction = "." + f"{rng.randrange(10**9):09d}"[: rng.randint(1, 9)] if index % 3 else ""
        offset = rng.choice(["Z", "", "+02:00", "-05:30", "+18:00", "-18:00", "-00:00"])
        day = rng.randint(1, days)
        values.append(_event(f"{year:04d}-{month:02d}-{day:02d}T{clock}{fraction}{offset}"))
    _assert_mirrors(spark, EVENTS, _payload(values))


# -- Without Spark -------------------------------------------------------------------------


@given(
    instant=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    offset_minutes=st.integers(-18 * 60, 18 * 60),
    digits=st.integers(0, 9),
)
def test_the_calendar_agrees_with_datetime(
    instant: datetime, offset_minutes: int, digits: int
) -> None:
    zone = timezone(timedelta(minutes=offset_minutes))
    local = instant.replace(tzinfo=zone)
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    fraction = f".{instant.microsecond:06d}{'789'}"[: digits + 1] if digits else ""
    # strftime's %Y drops leading zeros before year 1000 on glibc.
    text = f"{instant.year:04d}-{instant:%m-%dT%H:%M:%S}{fraction}{sign}{hours:02d}:{minutes:02d}"
    kept = int(f"{instant.microsecond:06d}789"[:digits].ljust(6, "0")[:6]) if digits else 0
    expected = (local.replace(microsecond=kept) - _EPOCH) // timedelta(microseconds=1)
    assert EVENTS.parser().parse(_event(text), None) == ParsedRecord(None, expected)


@settings(max_examples=300)
@given(value=st.binary(max_size=64) | _JSON_TEXTS.map(str.encode))
def test_no_input_makes_it_raise_or_doubt(value: bytes) -> None:
    for config in CONFIGS:
        parser = config.parser()
        for stamp in (None, KAFKA_US):
            parsed = parser.parse(value, stamp)
            assert parsed.unsure is None, (value, parsed)
            expected = (
                UNSURE
                if parsed.limit is not None
                else None
                if parsed.event_time_us is None
                else parsed.event_time_us // 1000
            )
            assert parser.event_time_ms(value, stamp) == expected


def test_event_time_ms_floors() -> None:
    kafka = EVENTS_KAFKA.parser()
    assert kafka.event_time_ms(b'{"article_id":"a"}', -1) == -1
    assert kafka.event_time_ms(b'{"article_id":"a"}', 1_999) == 1
    payload = EVENTS.parser()
    assert payload.event_time_ms(_event("1969-12-31T23:59:59.9995Z"), None) == -1
    assert payload.event_time_ms(_event("1969-12-31T23:59:59.9995"), None) == -1
    assert payload.parse(_event("1969-12-31T23:59:59.9995Z"), None).event_time_us == -500
    assert TYPED_OPTIONAL_TIME.parser().event_time_ms(_typed(t_opt=None), None) is None


@pytest.mark.parametrize(
    ("events", "time_source", "time_field"),
    [
        (PAGE_VIEW_EVENTS, "wall-clock", "event_time"),
        (PAGE_VIEW_EVENTS, "payload", "ts"),
        (PAGE_VIEW_EVENTS, "payload", "article_id"),
        (PAGE_VIEW_EVENTS, "kafka", "ts"),
        # A name that is no identifier, or an unsupported type, is refused where the field is
        # declared, before either parser sees it: see test_project.py.
        ((EventField("event_time", "string"),), "kafka", "t"),
        ((EventField("offset", "bigint"),), "kafka", "event_time"),
        ((EventField("value", "string"),), "payload", "value"),
        (
            (EventField("topic", "string"), EventField("ts", "timestamp")),
            "payload",
            "ts",
        ),
    ],
)
def test_refuses_the_settings_parse_events_refuses(
    spark: SparkSession, events: tuple[EventField, ...], time_source: str, time_field: str
) -> None:
    raw = spark.createDataFrame([], spark_schema(include_headers=False))
    options = {"time_source": time_source, "time_field": time_field, "max_value_bytes": LIMIT}
    with pytest.raises(InvalidValueError) as spark_error:
        parse_events(raw, events=events, **options)  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError) as mirror_error:
        EventParser(events=events, **options)  # type: ignore[arg-type]
    assert str(mirror_error.value) == str(spark_error.value)


def test_a_record_only_sparks_own_limits_refuse_is_unsure_to_a_scan() -> None:
    """Spark 4.2 refuses these; another Spark, or other parser settings, might read them as
    events, so a scan must not restart past them as if they were malformed for sure."""
    parser = EVENTS.parser()
    for value in (
        b'{"article_id":"a1","article_id":"a2","event_time":"2026-11-22T10:15:00Z"}',
        _event(x="NaN"),
        _event(x='"\\ud800"'),
        _event(x="[" * 2000 + "]" * 2000),
    ):
        parsed = parser.parse(value, KAFKA_US)
        assert (parsed.reason, parsed.unsure) == ("value is not valid JSON", None), _show(value)
        assert parsed.limit, _show(value)
        assert parser.event_time_ms(value, KAFKA_US) is UNSURE
    # Plain bad JSON is malformed whatever Spark reads it.
    assert parser.parse(b'{"article_id":', KAFKA_US).limit is None
    assert parser.event_time_ms(b'{"article_id":', KAFKA_US) is None
