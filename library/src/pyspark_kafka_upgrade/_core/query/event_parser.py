"""``parse_events``' rules in pure Python: each record's malformed reason and event time.

The upgrade planner reads event times without starting a JVM, and must get exactly what the
job's Spark parser gets, or know that it cannot be sure. ``tests/unit/test_event_parser.py``
checks this module against ``parse_events`` itself, record by record, on Spark 4.0 and 4.2:
where it is sure it must be right, and it must never take a valid event for malformed or
give it another time.

What Spark (4.0 and 4.2, Jackson behind ``try_parse_json``) was found to do, and this mirrors:

* ``try_parse_json`` reads the first complete JSON value and ignores the rest. A value is
  valid JSON for ``parse_events`` only as one whole document: its wrapper
  ``"[" + value + "," + size + "]"`` must end with the integer size, and a value that closes
  that array itself (``{...},58]`` padded to 58 bytes) must complete a second wrapper too,
  which it never does. Here the wrapped text must parse to its last character.
* Refused, hence "not valid JSON", by Jackson's or Spark's own limits: duplicate keys at any
  depth, ``NaN``/``Infinity``, nesting deeper than 1000 (the wrapper counts), numbers of
  more than 1000 digits (as Jackson counts them), keys longer than 50,000 and strings
  longer than 20,000,000 UTF-16 units, variants over 128 MiB. Lone surrogate escapes (keys
  or values): Spark 4.2 refuses them, Spark 4.0 reads them.
* Timestamps: years 0000-9999 on the proleptic Gregorian calendar, real month lengths,
  hours 00-23, minutes and seconds 00-59, offsets from -18:00 to +18:00 with minutes 00-59.

This mirror does not emulate those limits: a record near one is unsure (:class:`Unsure`),
as another Spark, or other parser settings, may draw the line elsewhere. Unsure are:
duplicate keys, ``NaN``/``Infinity``, lone surrogate escapes, nesting deeper than 500, a run
of 300 digits, keys over 25,000 characters, values over 20 MB, and more than 150 keys sharing
one Jackson hash (its symbol table then refuses the document depending on a per-parse random
seed). A scan takes an unsure record as one that may feed a window: it replays more, never
less.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Final

from pyspark_kafka_upgrade._core.query.columns import (
    EVENT_TIME,
    KAFKA_COLUMNS,
)
from pyspark_kafka_upgrade._core.query.event_fields import JSON_DESCRIPTIONS, payload_fields
from pyspark_kafka_upgrade._domain.records.scans import UNSURE, Unsure
from pyspark_kafka_upgrade._domain.values.project import EventField, EventType
from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError


@dataclass(frozen=True, slots=True)
class ParsedRecord:
    """What ``parse_events`` gives for one record; ``unsure`` says why it cannot be told.

    When unsure, ``reason`` and ``event_time_us`` are None and mean nothing.
    """

    reason: str | None
    event_time_us: int | None
    unsure: str | None = None


# -- Near the limits of Spark's JSON parsing: unsure ----------------------------------------

# Jackson refuses nesting past 1000, numbers past 1000 digits (a number under this run of
# digits in each part has fewer), keys past 50,000 UTF-16 units (2 per character at most).
_SAFE_DEPTH = 500
_DIGIT_RUN = 300
_LONG_DIGITS = re.compile("[0-9]{" + str(_DIGIT_RUN) + "}")
_SAFE_KEY_CHARS = 25_000
# Jackson's symbol table refuses a document once a collision chain passes this length twice.
_MAX_COLLISION_CHAIN = 150
# Jackson refuses strings over 20,000,000 UTF-16 units (one byte of UTF-8 each at least);
# Spark refuses variants over 128 MiB, about 3.25 bytes per byte of JSON at most.
_SAFE_BYTES = 20_000_000
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(slots=True)
class _Doubt:
    why: str


class _Doubtful(Exception):
    """Raised by the decoder's hooks: a rule Spark's parser may draw elsewhere applies."""


def _doubt_constant(name: str) -> object:
    raise _Doubtful(f"{name} (Spark refuses it)")


def _unique_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Doubtful("a duplicate key (Spark refuses it)")
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_object, parse_constant=_doubt_constant)


def _iter_strings(root: object, *, values: bool = True) -> Iterator[str]:
    """Every key, and every string value unless ``values`` is false."""
    stack = [root]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            yield from item
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif values and type(item) is str:
            yield item


def _depth(text: str) -> int:
    """Deepest nesting of a valid JSON text."""
    depth = deepest = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text, re.DOTALL):
        char = token.group()
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _jackson_hash(key: str) -> int:
    """Jackson's name hash without its seed: equal for two names of one length in any seed."""
    value = 0
    for unit in memoryview(key.encode("utf-16-le")).cast("H"):
        value = (value * 33 + unit) & 0xFFFFFFFF
    return value


def _near_limits(text: str, size: int, document: object) -> str | None:
    """Why Spark's verdict on a document Python parsed may hang on a limit, or None."""
    brackets = text.count("[") + text.count("{") if size > _SAFE_DEPTH else 0
    if brackets > _SAFE_DEPTH and _depth(text) > _SAFE_DEPTH:
        return f"nesting deeper than {_SAFE_DEPTH} (Spark refuses past 1000)"
    # Python joins an escaped pair into one code point: any surrogate left is a lone one.
    if _SURROGATE_ESCAPE.search(text) and any(map(_SURROGATE.search, _iter_strings(document))):
        return "a lone surrogate escape (Spark 4.2 refuses it, 4.0 reads it)"
    if size > _SAFE_KEY_CHARS or text.count(":") > _MAX_COLLISION_CHAIN:
        keys = set(_iter_strings(document, values=False))
        if any(len(key) > _SAFE_KEY_CHARS for key in keys):
            return f"a key over {_SAFE_KEY_CHARS} characters (Spark refuses 50,000 UTF-16 units)"
        if len(keys) > _MAX_COLLISION_CHAIN:
            chains: dict[tuple[int, int], int] = {}
            for key in keys:
                slot = (len(key.encode("utf-16-le")), _jackson_hash(key))
                chains[slot] = chains.get(slot, 0) + 1
            if max(chains.values()) > _MAX_COLLISION_CHAIN:
                return "over 150 keys share one Jackson hash; its seeded symbol table decides"
    return None


# -- Timestamps ----------------------------------------------------------------------------

_ISO_TIMESTAMP = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(?:Z|([+-])([0-9]{2}):([0-9]{2}))?"
)
# The proleptic Gregorian calendar of java.time, years 0000-9999 (Python's stops at 1).
_LEAP = bytes(year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) for year in range(10_000))
_YEAR_DAYS = list(accumulate((365 + leap for leap in _LEAP), initial=0))
_YEAR_START = [days - _YEAR_DAYS[1970] for days in _YEAR_DAYS]
_MONTH_DAYS = (
    (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31),
    (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31),
)
_MONTH_START = tuple(tuple(accumulate(days[:-1], initial=0)) for days in _MONTH_DAYS)
# Events cluster in time, so a day's number is usually known already; the bound keeps a
# scan of scattered dates from growing it without end.
_DAY_CACHE: dict[str, int | None] = {}
_DAY_CACHE_SIZE = 65_536
_UNSEEN = 1 << 62  # no day is that far from 1970


def _epoch_day(date: str) -> int | None:
    """Days from 1970-01-01 to ``YYYY-MM-DD``, None if there is no such day."""
    year, month, day = int(date[0:4]), int(date[5:7]), int(date[8:10])
    if not 1 <= month <= 12:
        return None
    leap = _LEAP[year]
    if not 1 <= day <= _MONTH_DAYS[leap][month]:
        return None
    return _YEAR_START[year] + _MONTH_START[leap][month] + day - 1


def _timestamp_us(text: str) -> int | None:
    """``_iso_timestamp``: microseconds since the epoch, None where Spark gives null."""
    match = _ISO_TIMESTAMP.fullmatch(text)
    if match is None:
        return None
    date, hour, minute, second, fraction, sign, offset_hour, offset_minute = match.groups()
    days = _DAY_CACHE.get(date, _UNSEEN)
    if days == _UNSEEN:
        days = _epoch_day(date)
        if len(_DAY_CACHE) >= _DAY_CACHE_SIZE:
            _DAY_CACHE.clear()
        _DAY_CACHE[date] = days
    if days is None:
        return None
    hours, minutes, seconds = int(hour), int(minute), int(second)
    if hours > 23 or minutes > 59 or seconds > 59:
        return None
    total = days * 86_400 + hours * 3_600 + minutes * 60 + seconds
    if sign is not None:
        # java.time's ZoneOffset: minutes 00-59, at most 18:00 either way.
        offset_minutes = int(offset_minute)
        offset = int(offset_hour) * 3_600 + offset_minutes * 60
        if offset_minutes > 59 or offset > 18 * 3_600:
            return None
        total += -offset if sign == "+" else offset
    micros = total * 1_000_000
    if fraction is not None:
        micros += int(fraction[:6].ljust(6, "0"))
    return micros


# -- The parser ----------------------------------------------------------------------------

STRING_KIND, BOOLEAN_KIND, INT_KIND, BIGINT_KIND, DOUBLE_KIND, TIMESTAMP_KIND = range(6)
_KINDS: dict[EventType, int] = {
    "string": STRING_KIND,
    "boolean": BOOLEAN_KIND,
    "int": INT_KIND,
    "bigint": BIGINT_KIND,
    "double": DOUBLE_KIND,
    "timestamp": TIMESTAMP_KIND,
}
_JSON_SPACE = " \t\r\n"
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_ABSENT: Final = object()
_NOT_JSON: Final = object()
_VALUE_NULL = "value is null"
_EMPTY = "value is empty"
_NOT_UTF8 = "value is not valid UTF-8"
_NOT_VALID_JSON = "value is not valid JSON"
_NOT_OBJECT = "value is not a JSON object"
_KAFKA_NULL = "Kafka timestamp is null"


@dataclass(frozen=True, slots=True)
class FieldRule:
    """How ``parse_events`` judges one declared field; ``kind`` is one of the ``*_KIND``s."""

    name: str
    kind: int
    required: bool
    missing: str
    null: str
    wrong_type: str
    is_event_time: bool


class EventParser:
    """``parse_events``' answer for one Kafka record, computed without Spark.

    Takes the settings ``parse_events`` takes and refuses what it refuses. Never raises on
    a record: where the mirror cannot be sure of Spark's answer it says so instead.
    """

    def __init__(
        self,
        *,
        time_source: str,
        time_field: str,
        max_value_bytes: int,
        events: Sequence[EventField],
    ) -> None:
        fields = payload_fields(events, time_source, time_field)
        outputs = [name for name, _ in fields] + ([EVENT_TIME] if time_source == "kafka" else [])
        clashes = sorted(set(outputs) & set(KAFKA_COLUMNS))
        if clashes:
            raise InvalidValueError(f"event fields {clashes} clash with the Kafka columns")
        # parse_events keeps the last field read into event_time: it must be a timestamp.
        timed = [field for name, field in fields if name == EVENT_TIME]
        if timed and timed[-1].type != "timestamp":
            raise InvalidValueError(
                f"time_field {time_field!r} must be declared as a timestamp in the event schema",
                field="time_field",
            )
        self._kafka_time = time_source == "kafka"
        self._max_value_bytes = max_value_bytes
        self._rules = tuple(
            FieldRule(
                name=field.name,
                kind=_KINDS[field.type],
                required=field.required,
                missing=f"missing required field '{field.name}'",
                null=f"required field '{field.name}' is null",
                wrong_type=(f"field '{field.name}' is not {JSON_DESCRIPTIONS[field.type]}"),
                is_event_time=output == EVENT_TIME,
            )
            for output, field in fields
        )

    def parse(self, value: bytes | None, kafka_timestamp_us: int | None) -> ParsedRecord:
        """The record's ``malformed_reason`` and ``unix_micros(event_time)``, or why unsure."""
        outcome = self._outcome(value, kafka_timestamp_us)
        if isinstance(outcome, str):
            return ParsedRecord(outcome, None)
        if isinstance(outcome, _Doubt):
            return ParsedRecord(None, None, outcome.why)
        return ParsedRecord(None, outcome)

    def event_time_ms(
        self, value: bytes | None, kafka_timestamp_us: int | None
    ) -> int | Unsure | None:
        """The event time floored to the millisecond; None when malformed (or no time).

        UNSURE when unsure: a scan takes the record as one that may feed a window, which
        replays more, never less.
        """
        outcome = self._outcome(value, kafka_timestamp_us)
        if type(outcome) is int:
            return outcome // 1000
        if isinstance(outcome, _Doubt):
            return UNSURE
        return None

    def _outcome(self, value: bytes | None, kafka_us: int | None) -> str | int | _Doubt | None:
        """A reason (malformed), microseconds or None (valid), or a doubt."""
        try:
            return self._evaluate(value, kafka_us)
        except Exception as exc:  # never raise on a record; say it is not understood
            return _Doubt(f"unexpected {type(exc).__name__}: {exc}")

    def _evaluate(self, value: bytes | None, kafka_us: int | None) -> str | int | _Doubt | None:
        if value is None:
            return _VALUE_NULL
        size = len(value)
        if size > self._max_value_bytes:
            return f"value is {size} bytes, over the {self._max_value_bytes}-byte limit"
        if size == 0:
            return _EMPTY
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return _NOT_UTF8
        document = _document(text, size)
        if document is _NOT_JSON:
            return _NOT_VALID_JSON
        if isinstance(document, _Doubt):
            return document
        if text[0] != "{" and not text.lstrip(_JSON_SPACE).startswith("{"):
            return _NOT_OBJECT
        if type(document) is not dict:
            return _Doubt("a value starting with '{' did not parse as an object")
        return self._fields(document, kafka_us)

    @property
    def rules(self) -> tuple[FieldRule, ...]:
        """The field rules, in the order ``parse_events`` reads the fields."""
        return self._rules

    @property
    def kafka_time(self) -> bool:
        """Whether the event time is the Kafka timestamp (else the payload's field)."""
        return self._kafka_time

    def object_time_ms(
        self, document: dict[str, Any], kafka_timestamp_us: int | None
    ) -> int | Unsure | None:
        """``event_time_ms`` of a value Spark reads as the JSON object ``document``, sure to
        be no nearer Jackson's limits than :func:`_near_limits` allows: the field rules alone.
        """
        try:
            outcome = self._fields(document, kafka_timestamp_us)
        except Exception:  # as _outcome: never raise on a record
            return UNSURE
        return outcome // 1000 if type(outcome) is int else None

    def _fields(self, document: dict[str, Any], kafka_us: int | None) -> str | int | None:
        """The field rules: a reason (malformed), microseconds or None (valid, no time)."""
        event_us: int | None = None
        for rule in self._rules:
            item = document.get(rule.name, _ABSENT)
            if item is _ABSENT:
                if rule.required:
                    return rule.missing
                continue
            if item is None:
                if rule.required:
                    return rule.null
                continue
            kind = rule.kind
            item_type = type(item)
            if kind == TIMESTAMP_KIND:
                micros = _timestamp_us(item) if item_type is str else None
                if micros is None:
                    return rule.wrong_type
                if rule.is_event_time:
                    event_us = micros
            elif kind == STRING_KIND:
                if item_type is not str:
                    return rule.wrong_type
            elif kind == BOOLEAN_KIND:
                if item_type is not bool:
                    return rule.wrong_type
            elif kind == DOUBLE_KIND:
                if item_type is not int and item_type is not float:
                    return rule.wrong_type
            elif item_type is not int or not (
                _INT_MIN <= item <= _INT_MAX if kind == INT_KIND else _LONG_MIN <= item <= _LONG_MAX
            ):
                return rule.wrong_type
        if self._kafka_time:
            return _KAFKA_NULL if kafka_us is None else kafka_us
        return event_us


def _document(text: str, size: int) -> object:
    """The document if Spark finds ``text`` valid JSON, _NOT_JSON if not, or a _Doubt."""
    if size > _SAFE_BYTES:
        return _Doubt("over 20 MB: Jackson's string or Spark's variant size limit may apply")
    if size >= _DIGIT_RUN and _LONG_DIGITS.search(text):
        return _Doubt("a run of 300 digits: a number may pass Jackson's 1000-digit limit")
    wrapped = f"[{text},{size}]"
    try:
        root, end = _DECODER.raw_decode(wrapped)
    except _Doubtful as doubtful:
        return _Doubt(str(doubtful))
    except RecursionError:
        return _Doubt("nesting too deep for Python's json module")
    except ValueError:
        return _NOT_JSON
    # Spark finds one document exactly when [text,size] parses as such to its last character.
    if end != len(wrapped) or len(root) != 2:
        return _NOT_JSON
    document: object = root[0]
    doubt = _near_limits(text, size, document)
    return document if doubt is None else _Doubt(doubt)


def spark_version() -> str:
    """The installed PySpark's version, read without importing it: ``pyspark 4.2.0``."""
    try:
        return "pyspark " + importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return "pyspark not installed"


# Bumped whenever a verdict rule here changes, so that plans made with the old rules are
# refused rather than applied with records judged differently.
PARSER_RULES_VERSION = 2


def parser_digest(
    events: Sequence[EventField], *, time_source: str, time_field: str, max_value_bytes: int
) -> str:
    """``sha256:`` and 16 hex digits of what decides a record's verdict: the schema (types
    and which fields are required), the time settings, the size limit and the Spark version
    installed (:func:`spark_version`).

    An upgrade plan names the digest its scans parsed with; a plan applied after any of
    these changed could restart past records that are no longer malformed.
    """
    document = {
        "events": [[event.name, event.type, event.required] for event in events],
        "time_source": time_source,
        "time_field": time_field,
        "max_value_bytes": max_value_bytes,
        "rules": PARSER_RULES_VERSION,
        "spark": spark_version(),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
