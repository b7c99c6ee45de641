"""``event_parser`` against ``parse_events`` itself: Spark's answer, record by record.

Each Spark test builds one static frame of Kafka rows and runs ``parse_events`` once, then
asks the mirror about every row under two rules. Where Spark finds a valid event with time
t, the mirror gives t or says it is unsure: the one-sided property a scan needs, since it
restarts a partition at the first record it takes to be at or after a bound. Where the
mirror is sure, its (reason, event time) is Spark's (``malformed_reason``,
``unix_micros(event_time)``) exactly. The scan's fast path (``event_fast_path``) must give
``event_time_ms``'s answer for every record of every Spark test, so it is held to Spark too.
The hand-written edges and the behaviours pinned down against Spark must never be unsure;
near Jackson's limits the mirror must be unsure (and Spark's verdict there is pinned down
too); the hypothesis corpora (valid events, type variations, random timestamps, byte
mutations) may be, but only rarely. An adversarial corpus checks the one-sided property on
its own. Tests without Spark check the calendar against ``datetime``, that no input makes
the mirror raise, and that the rules' check catches a mirror that is sure and wrong.

They run on both ends of the supported Spark range (``constraints.txt``,
``constraints-oldest.txt``).
"""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pyspark
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pyspark_kafka_upgrade._adapters.kafka.schema import (
    spark_schema,
)
from pyspark_kafka_upgrade._adapters.spark.parsing import (
    parse_events,
)
from pyspark_kafka_upgrade._application.upgrade.event_fast_path import FastEventParser
from pyspark_kafka_upgrade._core.query.columns import (
    EVENT_TIME,
    MALFORMED_REASON,
)
from pyspark_kafka_upgrade._core.query.event_parser import (
    EventParser,
    ParsedRecord,
    parser_digest,
    spark_version,
)
from pyspark_kafka_upgrade._domain.records.scans import UNSURE, Unsure
from pyspark_kafka_upgrade._domain.values.project import EventField, EventType
from pyspark_kafka_upgrade._domain.values.validation import (
    InvalidValueError,
)
from pyspark_kafka_upgrade._example.events import EVENTS as PAGE_VIEW_EVENTS

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
# For the records near Jackson's limits, some of them over 262,144 bytes.
LARGE = Config("large", PAGE_VIEW_EVENTS, "payload", "event_time", max_value_bytes=10**7)


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


def _rule_breaks(
    parser: EventParser, records: Sequence[Record], answers: Sequence[Answer]
) -> tuple[list[str], list[int]]:
    """Where the mirror breaks either rule (module docstring), and the offsets it is unsure of.

    ``parse`` and ``event_time_ms`` (what a scan reads) are both held to the rules.
    """
    problems: list[str] = []
    unsure: list[int] = []
    for offset, ((value, stamp), expected) in enumerate(zip(records, answers, strict=True)):
        mine = parser.parse(value, stamp)
        millis = parser.event_time_ms(value, stamp)
        said = (mine.reason, mine.event_time_us)
        reason, micros = expected
        spark_ms = None if micros is None else micros // 1000  # None when malformed
        where = f"#{offset} {_show(value)} ts={stamp}: spark {expected}"
        if mine.unsure is not None:
            unsure.append(offset)
            if said != (None, None) or millis is not UNSURE:
                problems.append(f"{where}, mirror unsure ({mine.unsure}), yet {said} / {millis}")
        elif millis is UNSURE:
            problems.append(f"{where}, mirror sure of {said}, yet event_time_ms is UNSURE")
        # 1. One-sided: a valid event keeps its exact time, or the mirror is unsure.
        if reason is None and not (
            mine.unsure is not None or (said == expected and millis == spark_ms)
        ):
            problems.append(f"{where}, a valid event, but the mirror {said} / {millis}")
        # 2. Sure means exact, the reason of a malformed record included.
        elif mine.unsure is None and (said != expected or millis != spark_ms):
            problems.append(f"{where}, mirror sure of {said} / {millis}")
    return problems, unsure


def _scan_breaks(config: Config, records: Sequence[Record]) -> list[str]:
    """Where the scan's fast path answers otherwise than ``event_time_ms``: over the records
    as one batch and in batches of 16, with the Kafka timestamps as the scan passes them."""
    mirror = config.parser()
    fast = FastEventParser(mirror, config.max_value_bytes)
    values = [value for value, _ in records]
    stamps = [stamp for _, stamp in records]
    expected = list(map(mirror.event_time_ms, values, stamps))
    passed = stamps if fast.kafka_time else [None] * len(records)
    whole = fast.event_times_ms(values, passed)
    chunked = [
        answer
        for start in range(0, len(records), 16)
        for answer in fast.event_times_ms(values[start : start + 16], passed[start : start + 16])
    ]
    return [
        f"#{offset} {_show(values[offset])} ts={stamps[offset]}: event_time_ms {want}, "
        f"the fast path {one} (as one batch), {chunk} (in batches of 16)"
        for offset, (want, one, chunk) in enumerate(zip(expected, whole, chunked, strict=True))
        if not want == one == chunk
    ]


def _assert_mirrors(
    spark: SparkSession, config: Config, records: Sequence[Record], *, unsure_allowed: float = 0
) -> list[Answer]:
    """Spark's answers, once the mirror was found to keep both rules, and the scan's fast
    path to answer as the mirror does."""
    answers = _spark_answers(spark, config, records)
    problems, unsure = _rule_breaks(config.parser(), records, answers)
    problems += _scan_breaks(config, records)
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


def _padded(body: Callable[[int], str]) -> bytes:
    """``body(n)`` padded with spaces to exactly n bytes, for the smallest n that fits."""
    for size in itertools.count(1):
        text = body(size).encode()
        if len(text) <= size:
            return text + b" " * (size - len(text))
    raise AssertionError("unreachable")


def _closing_early(prefix: str, second: Callable[[int], str], tail: str = "") -> bytes:
    """``prefix,<second(n)>]`` + ``tail``, n bytes: it closes Spark's wrapper "[value,n]"."""
    return _padded(lambda size: f"{prefix},{second(size)}]{tail}")


def _colliding_keys(count: int) -> list[str]:
    """Distinct names of one length with one Jackson hash: "Aa" and "B@" hash alike (x33)."""
    blocks = itertools.product(["Aa", "B@"], repeat=max(1, (count - 1).bit_length()))
    return ["".join(block) for block in itertools.islice(blocks, count)]


_PREFIX = '{"article_id":"a1","event_time":"2026-11-22T10:15:00Z"}'

CLOSING_EARLY = [
    # A value that closes Spark's wrapper early is not one JSON document, whatever the
    # second element it gives the wrapper: parse_events then wants a second wrapper whole.
    _closing_early(_PREFIX, str),
    _closing_early(_PREFIX, str, "junk"),
    # Three opening braces, built up so the template engine that bakes this file leaves it be.
    _closing_early(_PREFIX, str, "{" * 3 + " \\"),
    _closing_early(_PREFIX, str, ',"n":1}'),
    _closing_early(" " + _PREFIX, str),
    _closing_early(_PREFIX, lambda n: f" \t\r\n{n}\n\r\t "),
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
    # The other way round: closing the second wrapper, {"v":value,"n":size}, early.
    _padded(lambda n: f'{_PREFIX},"n":{n}}}'),
    _padded(lambda n: f'{_PREFIX},"n":{n}}}junk'),
]
# One document holding ",<its size>]" is one, wherever it holds it.
HOLDING_ITS_SIZE = [
    _padded(lambda n: f'{_PREFIX[:-1]},"n":[1,{n}]}}'),
    _padded(lambda n: f'{_PREFIX[:-1]},"n":[1, {n}\n]}}'),
    _padded(lambda n: f'{_PREFIX[:-1]},"n":",{n}]"}}'),
    _padded(lambda n: f'{_PREFIX[:-1]},",{n}]":1}}'),
    _padded(lambda n: f'{_PREFIX[:-1]},"n":[[1,{n}],{n}]}}'),
]

PINNED = [
    *CLOSING_EARLY,
    *HOLDING_ITS_SIZE,
    # Not literals JSON knows.
    *(_event(x=literal) for literal in ("nan", "inf", "-NaN")),
    # The same key in two objects, or two keys alike only once unescaped, are fine.
    _event(x='{"y":1}', z='{"y":1}'),
    b'{"article_id":"a1","event_time":"2026-11-22T10:15:00Z","a":1,"\\u0041":2}',
    # Surrogate pairs and an escaped backslash before "ud800" are fine.
    *(_event(x=f'"{text}"') for text in ("\\ud83d\\ude00", "\\uD83D\\uDE00", "\\\\ud800")),
    b'{"article_id":"a1","event_time":"2026-11-22T10:15:00Z","\\ud83d\\ude00":1}',
    # Well inside Jackson's limits, the mirror is sure: nesting up to 500, runs of up to
    # 299 digits, keys up to 25,000 characters, 150 keys of one Jackson hash.
    _event(x="[" * 498 + "]" * 498),
    _event(x="[" * 499 + "]" * 499),
    _event(x='{"a":' * 499 + "1" + "}" * 499),
    *(
        _event(x=number)
        for number in ("9" * 299, "-0." + "1" * 299, "9" * 299 + "." + "9" * 299 + "e" + "9" * 299)
    ),
    _event(**{"k" * 25_000: "1"}),
    _event(**{"\U0001f600" * 25_000: "1"}),
    _event(x='"' + "v" * 60_000 + '"'),
    _event(**dict.fromkeys(_colliding_keys(150), "1")),
    _event(
        **{
            key: "[" + ",".join([json.dumps({key: 1}, separators=(",", ":"))] * 2) + "]"
            for key in _colliding_keys(140)
        }
    ),
]

# Near Jackson's limits the mirror is unsure, though Spark 4.0 and 4.2 draw a line there:
# they refuse these (duplicate keys at any depth, equal once unescaped; NaN and Infinity;
# numbers over 1000 digits as Jackson counts them; nesting over 1000, the wrapper's level
# included; keys over 50,000 UTF-16 units) ...
REFUSED_AT_LIMITS = [
    *(_event(x=literal) for literal in ("NaN", "Infinity", "-Infinity")),
    _event(article_id='"a2"'),
    _event(x='{"y":1,"y":2}'),
    _event(x='[{"y":1},{"y":1,"y":1}]'),
    b'{"article_id":"a1","\\u0061rticle_id":"a2","event_time":"2026-11-22T10:15:00Z"}',
    _closing_early(_PREFIX.replace('"a1"', '"a1","article_id":"a2"'), str),
    *(
        _event(x=number)
        for number in (
            "9" * 1001,
            "-" + "9" * 1001,
            "9" * 1000 + ".5",
            "0." + "1" * 1001,
            "0.1e" + "1" * 999,
            "0e" + "1" * 1001,
            "1e-" + "1" * 1000,
            "1." + "1" * 998 + "e11",
        )
    ),
    _event(x="[" * 999 + "]" * 999),
    _event(x='{"a":' * 999 + "1" + "}" * 999),
    _event(x="[" * 2000 + "]" * 2000),
    _event(x="[" * 2000),
    _event(**{"k" * 50_001: "1"}),
    _event(**{"\U0001f600" * 25_000 + "k": "1"}),
    _event(**{"é" * 50_001: "1"}),
    ("{" + '"' + "\\u006b" * 50_001 + '":1,' + _PREFIX[1:]).encode(),
]
# ... and accepts these.
ACCEPTED_NEAR_LIMITS = [
    *(
        _event(x=number)
        for number in (
            "9" * 300,
            "9" * 1000,
            "-" + "9" * 1000,
            "9" * 999 + ".5",
            "0." + "1" * 1000,
            "-0." + "1" * 1000,
            "0.1e" + "1" * 998,
            "0e" + "1" * 1000,
            "1e" + "1" * 999,
            "1." + "1" * 998 + "e1",
            "[" + ",".join(["9" * 1000] * 3) + "]",
        )
    ),
    _event(x="[" * 500 + "]" * 500),
    _event(x="[" * 997 + "]" * 997),
    _event(x="[" * 998 + "]" * 998),
    _event(x='{"a":' * 998 + "1" + "}" * 998),
    _event(**{"k" * 25_001: "1"}),
    _event(**{"k" * 50_000: "1"}),
    _event(**{"\U0001f600" * 24_999 + "kk": "1"}),
    ("{" + '"' + "\\u006b" * 50_000 + '":1,' + _PREFIX[1:]).encode(),
]

# Lone surrogate escapes, in values and keys: Spark 4.2 refuses them, 4.0 reads them (the
# last one then is no timestamp). The mirror is unsure of them.
LONE_SURROGATES = [
    *(
        _event(x=f'"{text}"')
        for text in ("\\ud800", "\\uDC00", "\\udc00\\ud800", "\\ud800x", "\\ud800\\u0041")
    ),
    _event(x='"a\\udbff"'),
    b'{"article_id":"a1","event_time":"2026-11-22T10:15:00Z","\\ud800":1}',
    b'{"article_id":"\\ud800","event_time":"2026-11-22T10:15:00Z"}',
    b'{"article_id":"a1","event_time":"2026-11-22T10:15:00\\udc00"}',
]
LONE_SURROGATE_REASONS = {
    "4.0": [None] * 8 + ["field 'event_time' is not an ISO-8601 timestamp"],
    "4.2": ["value is not valid JSON"] * 9,
}

# Spark's answer here depends on what nobody can know ahead: a per-parse random seed, where
# Jackson's read buffer splits a long text.
UNSURE_CASES = [
    _event(**dict.fromkeys(_colliding_keys(320), "1")),
    _event(x="9" * 1000 + ".5", pad='"' + "p" * 40_000 + '"'),
]


def test_behaviours_pinned_down_against_spark(spark: SparkSession) -> None:
    answers = _assert_mirrors(spark, LARGE, _payload(PINNED))
    assert {reason for reason, _ in answers[: len(CLOSING_EARLY)]} == {"value is not valid JSON"}
    holding = answers[len(CLOSING_EARLY) : len(CLOSING_EARLY) + len(HOLDING_ITS_SIZE)]
    assert {reason for reason, _ in holding} == {None}


def _assert_unsure_where_spark_draws_a_line(
    spark: SparkSession, config: Config, refused: Sequence[bytes], accepted: Sequence[bytes]
) -> None:
    """The mirror is unsure of every record; Spark refuses ``refused``, accepts ``accepted``."""
    records = _payload([*refused, *accepted])
    answers = _assert_mirrors(spark, config, records, unsure_allowed=1)
    parser = config.parser()
    sure = [_show(value) for value, _ in records if parser.parse(value, KAFKA_US).unsure is None]
    assert not sure, f"sure of {len(sure)}: {sure[:5]}"
    expected = ["value is not valid JSON"] * len(refused) + [None] * len(accepted)
    wrong = [
        f"#{offset} {_show(value)}: {reason!r}, expected {wanted!r}"
        for offset, ((value, _), (reason, _), wanted) in enumerate(
            zip(records, answers, expected, strict=True)
        )
        if reason != wanted
    ]
    assert not wrong, "\n".join(wrong)


def test_near_jacksons_limits_the_mirror_is_unsure(spark: SparkSession) -> None:
    _assert_unsure_where_spark_draws_a_line(spark, LARGE, REFUSED_AT_LIMITS, ACCEPTED_NEAR_LIMITS)


def test_spark_versions_differ_on_lone_surrogates(spark: SparkSession) -> None:
    answers = _assert_mirrors(spark, LARGE, _payload(LONE_SURROGATES), unsure_allowed=1)
    parser = LARGE.parser()
    assert all(parser.parse(value, KAFKA_US).unsure for value in LONE_SURROGATES)
    reasons = [reason for reason, _ in answers]
    version = ".".join(pyspark.__version__.split(".")[:2])
    if version in LONE_SURROGATE_REASONS:
        assert reasons == LONE_SURROGATE_REASONS[version]
    else:  # a version between those tested: one of their answers
        assert reasons in LONE_SURROGATE_REASONS.values()


def test_strings_may_be_20_million_utf16_units(spark: SparkSession) -> None:
    config = Config("huge", PAGE_VIEW_EVENTS, "payload", "event_time", max_value_bytes=10**8)
    refused = [
        _event(x='"' + "v" * 20_000_001 + '"'),
        _event(x='"' + "v" * 19_999_999 + '\\ud83d\\ude00"'),
    ]
    accepted = [
        _event(x='"' + "v" * 20_000_000 + '"'),
        _event(x='"' + "v" * 19_999_999 + '\\u0076"'),
    ]
    _assert_unsure_where_spark_draws_a_line(spark, config, refused, accepted)


def test_the_rest_is_unsure_and_says_why() -> None:
    parser = LARGE.parser()
    for value in [*UNSURE_CASES, *REFUSED_AT_LIMITS, *ACCEPTED_NEAR_LIMITS, *LONE_SURROGATES]:
        parsed = parser.parse(value, KAFKA_US)
        assert parsed.reason is None and parsed.event_time_us is None, _show(value)
        assert parsed.unsure, _show(value)
        assert parser.event_time_ms(value, KAFKA_US) is UNSURE
    assert isinstance(UNSURE, Unsure) and repr(UNSURE) == "UNSURE"


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


def _first(pair: tuple[str, str]) -> str:
    return pair[0]


_JSON_TEXTS = st.recursive(
    _SCALAR_TEXTS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
        # Unique keys: a duplicate makes the mirror unsure; _objects adds those on purpose.
        st.lists(st.tuples(st.text(max_size=4), inner), max_size=3, unique_by=_first).map(
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
    names = {field.name for field in events}
    members += draw(
        st.lists(
            st.tuples(st.text(max_size=6).filter(lambda key: key not in names), _JSON_TEXTS),
            max_size=2,
            unique_by=_first,
        )
    )
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

    # Derandomized: the same corpus on every run, so that CI never fails on a draw that a
    # rerun would not make; its size, not its luck, is what makes it broad.
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
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
    answers = _assert_mirrors(spark, config, records, unsure_allowed=1)
    # About 1 object in 20 repeats a key on purpose, which leaves the mirror unsure; else
    # it may be unsure of 1% of the records at most.
    parser = config.parser()
    doubts = [parser.parse(value, stamp).unsure for value, stamp in records]
    other = [doubt for doubt in doubts if doubt is not None and "duplicate key" not in doubt]
    assert len(other) <= 0.01 * len(records), other[:10]
    # The corpus must exercise both sides, or an exact match would prove little.
    valid = sum(reason is None for reason, _ in answers)
    assert 0.03 * len(records) <= valid <= 0.8 * len(records), (valid, len(records))
    reasons = {reason.split("'")[0] for reason, _ in answers if reason is not None}
    assert len(reasons) >= 6, reasons


def _seeded_valid_events(count: int) -> list[Record]:
    """Valid page views at random instants of years 0000-9999, in many ISO-8601 shapes."""
    rng = random.Random(20261122)
    values = []
    for index in range(count):
        year, month = rng.randint(0, 9999), rng.randint(1, 12)
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        fraction = "." + f"{rng.randrange(10**9):09d}"[: rng.randint(1, 9)] if index % 3 else ""
        offset = rng.choice(["Z", "", "+02:00", "-05:30", "+18:00", "-18:00", "-00:00"])
        day = rng.randint(1, days)
        values.append(_event(f"{year:04d}-{month:02d}-{day:02d}T{clock}{fraction}{offset}"))
    return _payload(values)


def test_seeded_corpus_of_valid_events(spark: SparkSession) -> None:
    """Many valid events, the kind the planner scans: all exact, none unsure."""
    answers = _assert_mirrors(spark, EVENTS, _seeded_valid_events(2_000))
    assert {reason for reason, _ in answers} == {None}


# -- The one-sided property on adversarial records -----------------------------------------

_STAMP = "2026-11-22T10:15:00Z"


def _with_time(time_json: str, *, before: str = "", after: str = "") -> bytes:
    """A page view whose event_time is the raw JSON ``time_json``."""
    return f'{{"article_id":"a1",{before}"event_time":{time_json}{after}}}'.encode()


def _adversarial_events() -> list[bytes | None]:
    """Records built to split Spark and the mirror, for the page-view schema."""
    nested = [("[", "]"), ('{"a":', "}")]
    return [
        # The wrapper closed early, at sizes of 2, 3 and 4 digits, and one document that
        # only holds its size.
        *(_closing_early(" " * pad + _PREFIX, str) for pad in range(0, 50, 7)),
        *(_closing_early(_PREFIX, str, "x" * pad) for pad in (35, 36, 37, 38, 930, 931, 932)),
        *(_closing_early(_PREFIX, lambda n: f" {n}", " " * pad) for pad in range(0, 9, 2)),
        _closing_early(_PREFIX, lambda n: f"{n}.0e0"),
        _closing_early(_PREFIX, lambda n: f'"{n}"', '{"x":1}'),
        _padded(lambda n: f'{_PREFIX[:-1]},"n":[0,{n}]}}'),
        _padded(lambda n: f'{_PREFIX[:-1]},"n":[0, {n} ] }}'),
        # Duplicate keys, the event time itself included, at two times.
        _with_time(f'"{_STAMP}"', after=',"event_time":"2026-11-22T11:00:00Z"'),
        _with_time(f'"{_STAMP}"', after=',"event_time":null'),
        _with_time(f'"{_STAMP}"', before='"event_time":"2026-11-22T09:00:00Z",'),
        _with_time(f'"{_STAMP}"', after=',"x":{"k":1,"k":1}'),
        # NaN and Infinity, and as strings (fine).
        *(_with_time(f'"{_STAMP}"', after=f',"x":{name}') for name in ("NaN", "-Infinity")),
        *(_with_time(f'"{_STAMP}"', after=f',"x":"{name}"') for name in ("NaN", "Infinity")),
        _with_time("NaN"),
        # Nesting on both sides of the mirror's bound and of Jackson's.
        *(
            _with_time(f'"{_STAMP}"', after=f',"x":{left * depth}1{right * depth}')
            for depth in (1, 250, 497, 498, 499, 500, 997, 998, 999, 1500)
            for left, right in nested
        ),
        _with_time(f'"{_STAMP}"', after=',"x":' + "[" * 3000),
        # Lone surrogates, in the event time too; pairs are fine.
        _with_time(f'"{_STAMP}"', after=',"x":"\\udfff"'),
        _with_time(f'"{_STAMP}\\ud800"'),
        _with_time(f'"{_STAMP}"', after=',"\\ud83d\\udcc8":"\\ud83d\\udcc8"'),
        # Numbers: long, huge, and an event time written as one.
        *(
            _with_time(f'"{_STAMP}"', after=f',"x":{number}')
            for number in ("9" * 299, "9" * 300, "9" * 1001, "1e" + "9" * 299, "-0.0e-0", "1E400")
        ),
        *(_with_time(number) for number in ("1795342500", "1795342500000", "1.7953425e12")),
        # Event times as text that is no ISO-8601 timestamp, and one written with escapes.
        *(
            _with_time(f'"{text}"')
            for text in ("1795342500", "1795342500000", f" {_STAMP}", f"{_STAMP} ", f"+{_STAMP}")
        ),
        _with_time('"2026-11-22T10:15:00\\u005a"'),
        _with_time('"\\u0032026-11-22T10:15:00.999999999Z"'),
        # Trailing junk and whitespace, JSON's and not.
        *(_PREFIX.encode() + junk for junk in (b"x", b"]", b"}", b",", b"\x00", b"/**/", b"//")),
        *(ws + _PREFIX.encode() + ws for ws in (b" ", b"\t", b"\r", b"\n", b"\r\n \t")),
        *(
            ws + _PREFIX.encode()
            for ws in (b"\x0b", b"\x0c", b"\xc2\xa0", b"\xe2\x80\xa8", b"\xe3\x80\x80")
        ),
        # A byte order mark, before, after and inside.
        b"\xef\xbb\xbf" + _PREFIX.encode(),
        _PREFIX.encode() + b"\xef\xbb\xbf",
        _with_time(f'"{_STAMP}"', after=',"\xef\xbb\xbfx":1'.encode("latin-1").decode()),
        # Not UTF-8.
        *(
            _PREFIX.encode()[:-2] + raw + b'"}'
            for raw in (b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80")
        ),
        _PREFIX.encode().replace(b"a1", b"caf\xe9"),
        None,
        b"",
    ]


def _adversarial_typed() -> list[bytes | None]:
    """The same for the schema with one field of each type."""
    return [
        *(
            _typed(**{field: text})
            for field in ("i_req", "l_req", "d_req", "t_req", "t_opt")
            for text in ("NaN", "9" * 300, "1" + "0" * 18, "-0", "1e0", '"1"', "[1,1]")
        ),
        _typed(l_opt='{"k":1,"k":2}'),
        _typed(s_req='"\\ud800"'),
        _typed(t_opt='"2026-11-22T10:15:00Z"') + b" x",
        _closing_early(_typed().decode(), str),
        _padded(lambda n: _typed().decode()[:-1] + f',"x":[{n}]}}'),
    ]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_the_mirror_is_never_sure_and_wrong(spark: SparkSession, config: Config) -> None:
    """Where Spark finds a valid event with time t, the mirror gives t or is unsure; where
    the mirror is sure, it is right: over adversarial records, the hand-written edges, the
    seeded valid events and a fresh generated corpus, unsure records allowed."""
    if config.events == PAGE_VIEW_EVENTS:
        values = [*_adversarial_events(), *ORDINARY, *CLOSING_EARLY, *HOLDING_ITS_SIZE]
        values += [*REFUSED_AT_LIMITS[:20], *ACCEPTED_NEAR_LIMITS[:15], *LONE_SURROGATES]
        values += [value for value, _ in _seeded_valid_events(300)]
    else:
        values = [*_adversarial_typed(), *TYPED_EDGES]
    records = [*_payload(values), *((value, None) for value in values[::5])]
    records += _generated_corpus(config.events, examples=100)
    answers = _assert_mirrors(spark, config, records, unsure_allowed=1)
    # The property must have been put to the test on both sides.
    assert sum(reason is None for reason, _ in answers) >= 0.1 * len(records)
    assert sum(reason == "value is not valid JSON" for reason, _ in answers) >= 20


class _Mistaken(EventParser):
    """A mirror that gives ``wrong`` for one record, as a mirror with a bug would."""

    def __init__(self, value: bytes, wrong: Answer | None) -> None:
        super().__init__(
            time_source="payload",
            time_field="event_time",
            max_value_bytes=LIMIT,
            events=PAGE_VIEW_EVENTS,
        )
        self._value, self._wrong = value, wrong

    def parse(self, value: bytes | None, kafka_timestamp_us: int | None) -> ParsedRecord:
        if value != self._value:
            return super().parse(value, kafka_timestamp_us)
        if self._wrong is None:
            return ParsedRecord(None, None, "unsure by design")
        return ParsedRecord(*self._wrong)

    def event_time_ms(
        self, value: bytes | None, kafka_timestamp_us: int | None
    ) -> int | Unsure | None:
        if value != self._value:
            return super().event_time_ms(value, kafka_timestamp_us)
        if self._wrong is None:
            return UNSURE
        reason, micros = self._wrong
        return None if reason is not None or micros is None else micros // 1000


def test_the_rules_catch_a_mirror_that_is_sure_and_wrong() -> None:
    # Spark's answers, as test_hand_written_edges_of_the_event_schema pins them down.
    good_us = EVENTS.parser().parse(GOOD, None).event_time_us
    assert good_us == 1_795_342_500_250_000
    records: list[Record] = [(GOOD, KAFKA_US), (b"{", KAFKA_US)]
    answers: list[Answer] = [(None, good_us), ("value is not valid JSON", None)]
    assert _rule_breaks(EVENTS.parser(), records, answers) == ([], [])
    for value, wrong in [
        (GOOD, ("value is not valid JSON", None)),  # a valid event called malformed
        (GOOD, (None, good_us + 1_000)),  # or given a later time
        (GOOD, (None, None)),  # or no time
        (b"{", (None, good_us)),  # a malformed record called valid
        (b"{", ("value is not a JSON object", None)),  # or malformed for another reason
    ]:
        problems, _ = _rule_breaks(_Mistaken(value, wrong), records, answers)
        assert len(problems) == 1, (value, wrong, problems)
    # Unsure is always allowed.
    assert _rule_breaks(_Mistaken(GOOD, None), records, answers) == ([], [0])


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
def test_no_input_makes_it_raise(value: bytes) -> None:
    for config in CONFIGS:
        parser = config.parser()
        fast = FastEventParser(parser, config.max_value_bytes)
        for stamp in (None, KAFKA_US):
            parsed = parser.parse(value, stamp)
            # Short texts reach no limit of Jackson's; the generated objects may repeat a key.
            assert parsed.unsure is None or "duplicate key" in parsed.unsure, (value, parsed)
            expected = (
                UNSURE
                if parsed.unsure is not None
                else None
                if parsed.event_time_us is None
                else parsed.event_time_us // 1000
            )
            assert parser.event_time_ms(value, stamp) == expected
            assert fast.event_time_ms(value, stamp) == expected
            assert fast.event_times_ms([value] * 20, [stamp] * 20) == [expected] * 20


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


def test_plain_bad_json_is_malformed_for_sure() -> None:
    parser = EVENTS.parser()
    assert parser.parse(b'{"article_id":', KAFKA_US) == ParsedRecord(
        "value is not valid JSON", None
    )
    assert parser.event_time_ms(b'{"article_id":', KAFKA_US) is None
    # Closing Spark's wrapper early is plain bad JSON too.
    for value in CLOSING_EARLY:
        assert parser.parse(value, KAFKA_US).reason == "value is not valid JSON", _show(value)


def test_the_parser_digest_names_the_spark_version(monkeypatch: pytest.MonkeyPatch) -> None:
    def digest() -> str:
        return parser_digest(
            PAGE_VIEW_EVENTS, time_source="payload", time_field="event_time", max_value_bytes=LIMIT
        )

    installed = digest()
    assert spark_version() == f"pyspark {pyspark.__version__}"
    assert digest() == installed
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "4.1.1")
    assert (spark_version(), digest() != installed) == ("pyspark 4.1.1", True)

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert spark_version() == "pyspark not installed"
    assert digest() not in (installed, "")
