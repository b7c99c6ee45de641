"""``parse_events``' rules in pure Python: each record's malformed reason and event time.

The upgrade planner reads event times without starting a JVM, and must get exactly what the
job's Spark parser gets, or know that it cannot be sure. ``tests/unit/test_event_parser.py``
checks this module against ``parse_events`` itself, record by record.

What Spark (4.2, Jackson 2.21 behind ``try_parse_json``) was found to do, and this mirrors:

* ``try_parse_json`` reads the first complete JSON value of ``"[" + value + "," + size + "]"``
  and ignores the rest, so a value such as ``{...},58]`` followed by padding to 58 bytes is
  complete. The wrapped text is parsed here the same way.
* Refused, hence "not valid JSON": duplicate keys at any depth, ``NaN``/``Infinity``, lone
  surrogate escapes (keys or values), nesting deeper than 1000 (the wrapper counts),
  numbers longer than 1000 digits (counted as Jackson counts them, see
  :meth:`_CarefulScan.number_text`), keys longer than 50,000 and strings longer than
  20,000,000 UTF-16 units.
* Timestamps: years 0000-9999 on the proleptic Gregorian calendar, real month lengths,
  hours 00-23, minutes and seconds 00-59, offsets from -18:00 to +18:00 with minutes 00-59.

A few inputs stay unsure (:class:`Unsure`): documents over ~33 MB (Spark's 128 MiB variant
limit), more than 150 keys sharing one Jackson hash (its symbol table then refuses the
document depending on a per-parse random seed), a number of more than 1000 Jackson digits
whose count depends on where Jackson's read buffer splits a text over 32,768 characters.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Final

from pyspark_kafka_upgrade.model.scans import UNSURE, Unsure
from pyspark_kafka_upgrade.query.columns import (
    EVENT_TIME,
    KAFKA_COLUMNS,
)
from pyspark_kafka_upgrade.query.event_fields import JSON_DESCRIPTIONS, payload_fields
from pyspark_kafka_upgrade.values.project import EventField, EventType
from pyspark_kafka_upgrade.values.validation import InvalidValueError


@dataclass(frozen=True, slots=True)
class ParsedRecord:
    """What ``parse_events`` gives for one record; ``unsure`` says why it cannot be told.

    ``limit`` names the rule behind a "not valid JSON" that only Spark's parser, in the
    version and settings this mirror was checked against (Spark 4.2), imposes: duplicate
    keys, NaN, a lone surrogate, a number, key, string or nesting past Jackson's limits.
    ``parse`` gives that verdict as Spark 4.2 does; ``event_time_ms`` takes such a record
    as unsure, since another Spark could read it as an event.
    """

    reason: str | None
    event_time_us: int | None
    unsure: str | None = None
    limit: str | None = None


# -- Limits Spark's JSON parsing enforces ---------------------------------------------------

# Jackson's StreamReadConstraints defaults, and Spark's variant size limit outside tests.
_MAX_DEPTH = 1000
_MAX_NUMBER_DIGITS = 1000
_MAX_NAME_UNITS = 50_000
_MAX_STRING_UNITS = 20_000_000
# Jackson's symbol table refuses a document once a collision chain passes this length twice.
_MAX_COLLISION_CHAIN = 150
# Up to this many characters Jackson holds the whole text in one buffer.
_ONE_BUFFER_UNITS = 32_768
# A variant takes at most ~3.25 bytes per byte of JSON ("1e1," is a 9-byte double plus a
# 4-byte offset); past this the 128 MiB limit may be reached.
_VARIANT_SAFE_BYTES = 33_000_000
# Shorter texts cannot reach any of the limits above, so they skip the careful checks.
_SHORT_TEXT = 600

_JSON_SPACE = " \t\r\n"
# Spark's string-to-bigint cast trims bytes that are whitespace or ISO control in Java.
_CAST_TRIM = "".join(map(chr, range(0x21))) + "\x7f"
_CAST_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER_PARTS = re.compile(r"-?([0-9]+)(?:\.([0-9]+))?(?:[eE][+-]?([0-9]+))?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BRACKET_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


class _Refused(Exception):
    """Spark's parser refuses the document."""


class _FloatText(str):
    """A JSON number with a fraction or exponent, kept as written (checked text only)."""


def _refuse_constant(name: str) -> object:
    raise _Refused(name)


def _unique_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Refused("duplicate key")
    return obj


_FAST_DECODER = json.JSONDecoder(object_pairs_hook=_unique_object, parse_constant=_refuse_constant)


@dataclass(slots=True)
class _Doubt:
    why: str


@dataclass(slots=True)
class _Limit:
    """Not valid JSON by a rule of Spark's parser rather than of JSON itself."""

    why: str


class _CarefulScan:
    """One parse of a text that may reach Jackson's limits; its hooks check them."""

    def __init__(self, one_buffer: bool, count_keys: bool) -> None:
        self.one_buffer = one_buffer
        self.keys: set[str] | None = set() if count_keys else None
        self.doubt: str | None = None
        self.decoder = json.JSONDecoder(
            object_pairs_hook=self.object_pairs,
            parse_int=self.integer_text,
            parse_float=self.number_text,
            parse_constant=_refuse_constant,
        )

    def object_pairs(self, pairs: list[tuple[str, object]]) -> dict[str, object]:
        obj = _unique_object(pairs)
        for key in obj:
            if len(key) * 2 > _MAX_NAME_UNITS and _utf16_units(key) > _MAX_NAME_UNITS:
                raise _Refused("key too long")
        if self.keys is not None:
            self.keys.update(obj)
        return obj

    def integer_text(self, text: str) -> int:
        if len(text) - text.startswith("-") > _MAX_NUMBER_DIGITS:
            raise _Refused("integer too long")
        return int(text)

    def number_text(self, text: str) -> _FloatText:
        """Jackson's count: its fast path counts absent parts as 0, its slow path as -1.

        The slow path reads numbers starting with 0 and numbers split by the read buffer.
        """
        if len(text) > _MAX_NUMBER_DIGITS:
            match = _NUMBER_PARTS.fullmatch(text)
            if match is None:  # the scanner only hands over JSON numbers
                raise _Refused("number")
            whole, fraction, exponent = match.groups()
            parts = len(whole) + len(fraction or "") + len(exponent or "")
            slow = parts - (fraction is None) - (exponent is None)
            if whole == "0" or slow > _MAX_NUMBER_DIGITS:
                if slow > _MAX_NUMBER_DIGITS:
                    raise _Refused("number too long")
            elif parts > _MAX_NUMBER_DIGITS:
                if self.one_buffer:
                    raise _Refused("number too long")
                self.doubt = "a number's Jackson length depends on its read buffer"
        return _FloatText(text)


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _iter_strings(root: object) -> Iterator[str]:
    """Every key and string value; iterative, as documents nest up to 1000 deep."""
    stack = [root]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            yield from item
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif type(item) is str:
            yield item


def _has_lone_surrogate(root: object) -> bool:
    # Python joins escaped pairs into one code point, so any surrogate left is a lone one.
    return any(_SURROGATE.search(text) for text in _iter_strings(root))


def _bracket_depth(text: str) -> int:
    """Deepest nesting of ``text``'s first value; exact for valid JSON."""
    depth = deepest = 0
    for token in _BRACKET_TOKEN.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
            if depth == 0:
                break
    return deepest


def _jackson_hash(key: str) -> int:
    """Jackson's name hash without its seed: equal for two names of one length in any seed."""
    value = 0
    for unit in memoryview(key.encode("utf-16-le", "surrogatepass")).cast("H"):
        value = (value * 33 + unit) & 0xFFFFFFFF
    return value


def _crowded_hash(keys: set[str]) -> bool:
    groups: dict[tuple[int, int], int] = {}
    for key in keys:
        slot = (_utf16_units(key), _jackson_hash(key))
        groups[slot] = groups.get(slot, 0) + 1
    return max(groups.values()) > _MAX_COLLISION_CHAIN


def _decode_deep(decoder: json.JSONDecoder, text: str) -> tuple[object, int]:
    try:
        return decoder.raw_decode(text)
    except RecursionError:
        pass
    # Jackson allows 1000 levels; Python's recursion limit may stop short of that.
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(previous + _MAX_DEPTH + 200)
    try:
        return decoder.raw_decode(text)
    finally:
        sys.setrecursionlimit(previous)


def _bigint_cast(item: object) -> int | None:
    """``try_variant_get(item, '$', 'bigint')`` for the wrapper's second element."""
    kind = type(item)
    if kind is int:
        return item  # type: ignore[return-value]
    if kind is _FloatText:
        text = str(item)
        digits = text.lstrip("-")
        if "e" not in digits and "E" not in digits:
            whole, _, fraction = digits.partition(".")
            unscaled = (whole + fraction).lstrip("0")
            if len(fraction) <= 38 and max(len(unscaled), 1) <= 38:
                # A DECIMAL: the cast truncates toward zero.
                value = int(whole)
                return -value if text.startswith("-") else value
        number = float(text)
        if number != number or number in (float("inf"), float("-inf")):
            return None
        truncated = int(number)
        return truncated if _LONG_MIN <= truncated <= _LONG_MAX else None
    if kind is str:
        trimmed = str(item).strip(_CAST_TRIM)
        if _CAST_INTEGER.fullmatch(trimmed) is None:
            return None
        value = int(trimmed)
        return value if _LONG_MIN <= value <= _LONG_MAX else None
    # Booleans, null, arrays and objects never equal a size of four bytes or more.
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

_STRING, _BOOLEAN, _INT, _BIGINT, _DOUBLE, _TIMESTAMP = range(6)
_KINDS: dict[EventType, int] = {
    "string": _STRING,
    "boolean": _BOOLEAN,
    "int": _INT,
    "bigint": _BIGINT,
    "double": _DOUBLE,
    "timestamp": _TIMESTAMP,
}
_ABSENT: Final = object()
_NOT_JSON: Final = object()
_VALUE_NULL = "value is null"
_EMPTY = "value is empty"
_NOT_UTF8 = "value is not valid UTF-8"
_NOT_VALID_JSON = "value is not valid JSON"
_NOT_OBJECT = "value is not a JSON object"
_KAFKA_NULL = "Kafka timestamp is null"


@dataclass(frozen=True, slots=True)
class _FieldRule:
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
            _FieldRule(
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
        if isinstance(outcome, _Limit):
            return ParsedRecord(_NOT_VALID_JSON, None, limit=outcome.why)
        return ParsedRecord(None, outcome)

    def event_time_ms(
        self, value: bytes | None, kafka_timestamp_us: int | None
    ) -> int | Unsure | None:
        """The event time floored to the millisecond; None when malformed (or no time).

        UNSURE when unsure, and for a record only Spark's parser limits make malformed: a
        scan takes it as one that may feed a window, which replays more, never less.
        """
        outcome = self._outcome(value, kafka_timestamp_us)
        if type(outcome) is int:
            return outcome // 1000
        if isinstance(outcome, _Doubt | _Limit):
            return UNSURE
        return None

    def _outcome(
        self, value: bytes | None, kafka_us: int | None
    ) -> str | int | _Doubt | _Limit | None:
        """A reason (malformed), microseconds or None (valid), or a doubt."""
        try:
            return self._evaluate(value, kafka_us)
        except Exception as exc:  # never raise on a record; say it is not understood
            return _Doubt(f"unexpected {type(exc).__name__}: {exc}")

    def _evaluate(
        self, value: bytes | None, kafka_us: int | None
    ) -> str | int | _Doubt | _Limit | None:
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
        if isinstance(document, _Doubt | _Limit):
            return document
        if text[0] != "{" and not text.lstrip(_JSON_SPACE).startswith("{"):
            return _NOT_OBJECT
        if type(document) is not dict:
            return _Doubt("a value starting with '{' did not parse as an object")
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
            if kind == _TIMESTAMP:
                micros = _timestamp_us(item) if item_type is str else None
                if micros is None:
                    return rule.wrong_type
                if rule.is_event_time:
                    event_us = micros
            elif kind == _STRING:
                if item_type is not str:
                    return rule.wrong_type
            elif kind == _BOOLEAN:
                if item_type is not bool:
                    return rule.wrong_type
            elif kind == _DOUBLE:
                if item_type is not int and item_type is not float and item_type is not _FloatText:
                    return rule.wrong_type
            elif item_type is not int or not (
                _INT_MIN <= item <= _INT_MAX if kind == _INT else _LONG_MIN <= item <= _LONG_MAX
            ):
                return rule.wrong_type
        if self._kafka_time:
            return _KAFKA_NULL if kafka_us is None else kafka_us
        return event_us


def _document(text: str, size: int) -> object:
    """``$[0]`` of Spark's parse of ``[text,size]`` if complete, else _NOT_JSON or a doubt."""
    wrapped = f"[{text},{size}]"
    if len(text) <= _SHORT_TEXT:
        try:
            root, end = _FAST_DECODER.raw_decode(wrapped)
        except _Refused as refused:
            return _Limit(str(refused))
        except ValueError:
            return _NOT_JSON
        except RecursionError:
            return _careful_document(wrapped, size)
        if end != len(wrapped):
            # The root closed inside the value: its second element decides, checked below.
            return _careful_document(wrapped, size)
        if "\\u" in text and _has_lone_surrogate(root):
            return _Limit("a lone surrogate escape")
        return _complete(root, size)
    return _careful_document(wrapped, size)


def _careful_document(wrapped: str, size: int) -> object:
    units = len(wrapped) if wrapped.isascii() else _utf16_units(wrapped)
    scan = _CarefulScan(
        one_buffer=units <= _ONE_BUFFER_UNITS, count_keys=wrapped.count(":") > _MAX_COLLISION_CHAIN
    )
    try:
        root, end = _decode_deep(scan.decoder, wrapped)
    except _Refused as refused:
        return _Limit(str(refused))
    except ValueError:
        return _NOT_JSON
    except RecursionError:
        if _bracket_depth(wrapped) > _MAX_DEPTH:
            return _Limit("nesting deeper than Jackson's limit")
        return _Doubt("nesting too deep for Python's json module to check")
    parsed = wrapped[:end]
    if parsed.count("[") + parsed.count("{") > _MAX_DEPTH and _bracket_depth(parsed) > _MAX_DEPTH:
        return _Limit("nesting deeper than Jackson's limit")
    if "\\u" in parsed and _has_lone_surrogate(root):
        return _Limit("a lone surrogate escape")
    if len(parsed) > _MAX_STRING_UNITS // 2 and any(
        len(text) * 2 > _MAX_STRING_UNITS and _utf16_units(text) > _MAX_STRING_UNITS
        for text in _iter_strings(root)
    ):
        return _Limit("a string longer than Jackson's limit")
    document = _complete(root, size)
    # An incomplete document is refused whatever the doubts below would decide.
    if document is _NOT_JSON:
        return _NOT_JSON
    if scan.doubt is not None:
        return _Doubt(scan.doubt)
    if scan.keys is not None and len(scan.keys) > _MAX_COLLISION_CHAIN and _crowded_hash(scan.keys):
        return _Doubt("over 150 keys share one Jackson hash; its seeded symbol table decides")
    if size > _VARIANT_SAFE_BYTES:
        return _Doubt("the document may exceed Spark's 128 MiB variant limit")
    return document


def _complete(root: object, size: int) -> object:
    # complete: $[1] cast to bigint is the size and there is no $[2].
    if type(root) is not list or len(root) != 2 or _bigint_cast(root[1]) != size:
        return _NOT_JSON
    return root[0]


# Bumped whenever a verdict rule here changes, so that plans made with the old rules are
# refused rather than applied with records judged differently.
PARSER_RULES_VERSION = 1


def parser_digest(
    events: Sequence[EventField], *, time_source: str, time_field: str, max_value_bytes: int
) -> str:
    """``sha256:`` and 16 hex digits of what decides a record's verdict: the schema (types
    and which fields are required), the time settings and the size limit.

    An upgrade plan names the digest its scans parsed with; a plan applied after any of
    these changed could restart past records that are no longer malformed.
    """
    document = {
        "events": [[event.name, event.type, event.required] for event in events],
        "time_source": time_source,
        "time_field": time_field,
        "max_value_bytes": max_value_bytes,
        "rules": PARSER_RULES_VERSION,
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
