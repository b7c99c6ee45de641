"""``EventParser.event_time_ms`` for a batch of records, fast where it can be sure, exact always.

The mirror decodes JSON with a Python hook on every object (to see duplicate keys) and
parses each timestamp with a regular expression: about 4.5 us a record, more than reading it
from Kafka. Most values are plain: no backslash (so no escape, and every ``"`` opens or
closes a string), no whitespace before a colon, far from Jackson's limits. For those, orjson
(C) decodes, and what the hook would see is counted instead: every key written is a string
closed by ``"`` right before its ``:``, so ``":`` occurs once per key, and once more per
string that starts with a colon. The document's keys, nested objects included, number as
many only if no object repeats a key (and no string starts with a colon); anything else
goes to the mirror.

A batch whose values are all plain objects and whose declared fields all have their
expected types is judged column by column: types by set, int ranges by min and max,
timestamps by ``timestamp_columns``. Where a column strays, each record of the batch is
judged by the mirror's own field rules (``EventParser.object_time_ms``) on the decoded
object; a value that is not plain goes to ``EventParser.event_time_ms`` whole.
``tests/unit/test_event_fast_path.py`` holds every answer to the mirror's, and
``tests/unit/test_event_parser.py`` both to Spark's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import repeat
from types import NoneType
from typing import Any, cast

import orjson

from pyspark_kafka_upgrade._application.upgrade.timestamp_columns import timestamps_ms
from pyspark_kafka_upgrade._core.query.event_parser import (
    _DIGIT_RUN,
    _MAX_COLLISION_CHAIN,
    _SAFE_DEPTH,
    _SAFE_KEY_CHARS,
    BIGINT_KIND,
    BOOLEAN_KIND,
    DOUBLE_KIND,
    INT_KIND,
    STRING_KIND,
    TIMESTAMP_KIND,
    EventParser,
)
from pyspark_kafka_upgrade._domain.records.scans import Unsure

EventTimes = list[int | Unsure | None]

_JSON_SPACE = b" \t\r\n"
_LONG_DIGITS = re.compile(b"[0-9]{" + str(_DIGIT_RUN).encode() + b"}")
# Past this many bytes a key may be long enough for Jackson's limit: the mirror judges.
_PLAIN_BYTES = _SAFE_KEY_CHARS
# A separator no check below can see across: none of them matches a newline alone.
_SEPARATOR = b"\n"
_INT_RANGE = {INT_KIND: (-(2**31), 2**31 - 1), BIGINT_KIND: (-(2**63), 2**63 - 1)}
# The types a field of each kind holds when the record is valid as far as it goes.
_VALID_TYPES: dict[int, frozenset[type]] = {
    STRING_KIND: frozenset({str}),
    BOOLEAN_KIND: frozenset({bool}),
    INT_KIND: frozenset({int}),
    BIGINT_KIND: frozenset({int}),
    DOUBLE_KIND: frozenset({int, float}),
    TIMESTAMP_KIND: frozenset({str}),
}


class FastEventParser:
    """``parser.event_time_ms`` over batches of records; the same answer for every record."""

    def __init__(self, parser: EventParser, max_value_bytes: int) -> None:
        self._parser = parser
        self._largest = min(max_value_bytes, _PLAIN_BYTES)

    @property
    def kafka_time(self) -> bool:
        """Whether the event time is the Kafka timestamp: else the parser never reads it."""
        return self._parser.kafka_time

    def event_times_ms(
        self, values: Sequence[bytes | None], kafka_us: Sequence[int | None]
    ) -> EventTimes:
        """``[parser.event_time_ms(v, t) for v, t in zip(values, kafka_us)]``."""
        try:
            documents = self._plain_objects(values)
            if documents is None:
                return list(map(self.event_time_ms, values, kafka_us))
            times = self._by_column(documents, kafka_us)
            if times is None:
                return list(map(self._parser.object_time_ms, documents, kafka_us))
            return times
        except Exception:  # unforeseen: the mirror judges, and it never raises
            return list(map(self._parser.event_time_ms, values, kafka_us))

    def event_time_ms(self, value: bytes | None, kafka_us: int | None) -> int | Unsure | None:
        """``parser.event_time_ms(value, kafka_us)`` for one record."""
        try:
            document = self._plain_object(value)
        except Exception:  # unforeseen: the mirror judges, and it never raises
            document = None
        if document is None:
            return self._parser.event_time_ms(value, kafka_us)
        return self._parser.object_time_ms(document, kafka_us)

    def _plain_object(self, value: bytes | None) -> dict[str, Any] | None:
        """The object a plain value holds, or None where the mirror must judge."""
        if type(value) is not bytes or not 0 < len(value) <= self._largest:
            return None
        if b"\\" in value or not _valid_utf8(value):
            return None
        if len(value) >= _DIGIT_RUN and _LONG_DIGITS.search(value):
            return None
        if len(value) > _SAFE_DEPTH and value.count(b"[") + value.count(b"{") > _SAFE_DEPTH:
            return None
        try:
            document = orjson.loads(value)
        except ValueError:  # orjson's JSONDecodeError among them
            return None
        written = _keys_written(value)
        if type(document) is not dict or written > _MAX_COLLISION_CHAIN:
            return None
        return document if _keys(document) == written else None

    def _plain_objects(self, values: Sequence[bytes | None]) -> list[dict[str, Any]] | None:
        """``_plain_object`` of every value, or None unless all are plain objects.

        The checks run over the batch's values joined, most in C; only orjson sees each.
        """
        if set(map(type, values)) != {bytes}:
            return None
        plain = cast(list[bytes], values)
        sizes = list(map(len, plain))
        largest = max(sizes)
        if min(sizes) == 0 or largest > self._largest:
            return None
        joined = _SEPARATOR.join(plain)
        if b"\\" in joined or not _valid_utf8(joined):
            return None
        if largest >= _DIGIT_RUN and _LONG_DIGITS.search(joined):
            return None
        if largest > _SAFE_DEPTH and any(
            value.count(b"[") + value.count(b"{") > _SAFE_DEPTH for value in plain
        ):
            return None
        # '":' takes two bytes a time: only a value over twice the bound can pass it.
        if largest > 2 * _MAX_COLLISION_CHAIN and any(
            _keys_written(value) > _MAX_COLLISION_CHAIN for value in plain
        ):
            return None
        try:
            documents = list(map(orjson.loads, plain))
        except ValueError:  # orjson's JSONDecodeError among them
            return None
        if set(map(type, documents)) != {dict}:
            return None
        # Per value, '":' counts its keys written at least, which are at least the keys kept
        # at any depth, which are at least those kept at the top: equal sums of the first
        # and the last make every value's counts equal. Only nested objects can keep them
        # apart (their keys are not at the top), and only then are they walked.
        written = _keys_written(joined)
        if sum(map(len, documents)) == written or sum(map(_keys, documents)) == written:
            return documents
        return None

    def _by_column(
        self, documents: list[dict[str, Any]], kafka_us: Sequence[int | None]
    ) -> EventTimes | None:
        """Every record's time, where every declared field holds a valid value or (when
        optional) none; None where a field strays from that."""
        count = len(documents)
        event_ms: list[int | None] = [None] * count
        for rule in self._parser.rules:
            column = list(map(dict.get, documents, repeat(rule.name, count)))
            types = set(map(type, column))
            valid = _VALID_TYPES[rule.kind]
            if not types <= (valid if rule.required else valid | {NoneType}):
                return None
            present = [item for item in column if item is not None] if NoneType in types else column
            if rule.kind in _INT_RANGE and present:
                low, high = _INT_RANGE[rule.kind]
                ints = cast(list[int], present)
                if min(ints) < low or max(ints) > high:
                    return None
            if rule.kind == TIMESTAMP_KIND:
                millis = timestamps_ms(cast(list[str], present))
                if None in millis:
                    return None
                if rule.is_event_time:
                    # parse_events keeps the last such field that holds a time.
                    found = iter(millis)
                    event_ms = (
                        millis
                        if len(millis) == count
                        else [
                            mine if item is None else next(found)
                            for item, mine in zip(column, event_ms, strict=True)
                        ]
                    )
        if not self._parser.kafka_time:
            return cast(EventTimes, event_ms)
        if None in kafka_us:
            return None
        return [stamp // 1000 for stamp in cast(Sequence[int], kafka_us)]


def _keys_written(value: bytes) -> int:
    """The keys written in a value without a backslash, at least; more only where a string
    starts with a colon (after whitespace, if any)."""
    # Whitespace gone, each key's closing quote meets its colon. Inside a string there is
    # no quote to meet one, and after a string that is no key comes no colon.
    return value.translate(None, _JSON_SPACE).count(b'":')


def _valid_utf8(value: bytes) -> bool:
    if value.isascii():
        return True
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _keys(document: object) -> int:
    """How many keys the objects in ``document`` hold, nested ones included."""
    keys = 0
    stack = [document]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            keys += len(item)
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return keys
