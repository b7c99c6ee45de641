"""The mirror's ISO-8601 timestamp parse over a whole column at once, with numpy.

``event_parser._timestamp_us`` costs about a microsecond and a half a string: more than
reading the record from Kafka. Events of one producer are written in one shape, so the
strings of a batch mostly share their length and the places of their separators. Those are
laid side by side as one byte matrix, checked and computed column by column; a string of
another shape, or one whose date or time is out of range, goes to ``_timestamp_us`` itself.
So every answer is ``_timestamp_us``'s, floored to the millisecond
(``tests/unit/test_timestamp_columns.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from pyspark_kafka_upgrade._core.query.event_parser import (
    _ISO_TIMESTAMP,
    _LEAP,
    _MONTH_DAYS,
    _MONTH_START,
    _YEAR_START,
    _timestamp_us,
)

# Under this many strings of one length, numpy's fixed cost per call outweighs its gain.
_SMALLEST_GROUP = 16
_ZERO = ord("0")
_LEAP_OF_YEAR = np.frombuffer(_LEAP, dtype=np.uint8).astype(np.int64)
_DAYS_BEFORE_YEAR = np.array(_YEAR_START, dtype=np.int64)
_DAYS_IN_MONTH = np.array(_MONTH_DAYS, dtype=np.int64)
_DAYS_BEFORE_MONTH = np.array([(*starts, 0) for starts in _MONTH_START], dtype=np.int64)
# The groups of _ISO_TIMESTAMP that hold digits, by number.
_DATE, _HOUR, _MINUTE, _SECOND, _FRACTION, _SIGN, _OFFSET_HOUR, _OFFSET_MINUTE = range(1, 9)
# A shape's layout, by its string with every digit a zero: a scan meets few shapes, the bound
# keeps strings of scattered shapes from growing it without end.
_LAYOUTS: dict[str, tuple[Any, Any, list[list[tuple[int, int]]]]] = {}
_AS_ZEROS = str.maketrans("123456789", "000000000")
_LAYOUTS_KEPT = 64


def timestamps_ms(texts: Sequence[str]) -> list[int | None]:
    """``_timestamp_us(text)`` floored to the millisecond for each text, None where it is
    None; most of it computed column-wise."""
    lengths = set(map(len, texts))
    if len(lengths) == 1 and len(texts) >= _SMALLEST_GROUP:
        return _same_length(texts)
    found: list[int | None] = [None] * len(texts)
    by_length: dict[int, list[int]] = {length: [] for length in lengths}
    for row, length in enumerate(map(len, texts)):
        by_length[length].append(row)
    for rows in by_length.values():
        group = [texts[row] for row in rows]
        millis = _one_by_one(group) if len(rows) < _SMALLEST_GROUP else _same_length(group)
        for row, value in zip(rows, millis, strict=True):
            found[row] = value
    return found


def _one_by_one(texts: Sequence[str]) -> list[int | None]:
    return [None if micros is None else micros // 1000 for micros in map(_timestamp_us, texts)]


def _same_length(texts: Sequence[str]) -> list[int | None]:
    """``timestamps_ms`` of strings of one length."""
    shape = next(filter(None, map(_ISO_TIMESTAMP.fullmatch, texts)), None)
    joined = "".join(texts)
    if shape is None or not joined.isascii():
        return _one_by_one(texts)
    low, high, weights = _layout(shape)
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).reshape(len(texts), len(low))
    # Every literal character of the shape where it has it, and a digit wherever it has one:
    # then _ISO_TIMESTAMP matches the string with its groups at the same places.
    shaped = ((chars >= low) & (chars <= high)).all(axis=1)
    digits = chars.astype(np.int64) - _ZERO
    digits[~shaped] = 0  # keeps the calendar's look-ups below within their tables
    year, month, day, hour, minute, second, fraction, offset_hour, offset_minute = (
        _number(digits, terms) for terms in weights
    )
    month_ok = (month >= 1) & (month <= 12)
    month = np.where(month_ok, month, 1)
    leap = _LEAP_OF_YEAR[year]
    good = shaped & month_ok & (day >= 1) & (day <= _DAYS_IN_MONTH[leap, month])
    good &= (hour <= 23) & (minute <= 59) & (second <= 59)
    # java.time's ZoneOffset: minutes 00-59, at most 18:00 either way.
    offset = offset_hour * 3_600 + offset_minute * 60
    good &= (offset_minute <= 59) & (offset <= 18 * 3_600)
    days = _DAYS_BEFORE_YEAR[year] + _DAYS_BEFORE_MONTH[leap, month] + day - 1
    total = days * 86_400 + hour * 3_600 + minute * 60 + second
    total += -offset if shape.group(_SIGN) == "+" else offset
    # numpy's // floors as Python's does.
    millis: list[int | None] = ((total * 1_000_000 + fraction) // 1000).tolist()
    bad = np.flatnonzero(~good).tolist()
    for row, value in zip(bad, _one_by_one([texts[row] for row in bad]), strict=True):
        millis[row] = value
    return millis


def _number(digits: Any, terms: list[tuple[int, int]]) -> Any:
    """The column of numbers the digits at ``terms``' columns, each times its weight, make."""
    number = np.zeros(len(digits), dtype=np.int64)
    for column, weight in terms:
        number += digits[:, column] * weight
    return number


def _layout(shape: re.Match[str]) -> tuple[Any, Any, list[list[tuple[int, int]]]]:
    """Per character of ``shape``'s string, the lowest and highest byte a string of that
    shape holds there; and the weights that turn its digits into the nine fields (year,
    month, day, hour, minute, second, microseconds, offset hours, offset minutes)."""
    key = shape.string.translate(_AS_ZEROS)
    if key not in _LAYOUTS:
        low = np.frombuffer(shape.string.encode("ascii"), dtype=np.uint8).copy()
        high = low.copy()
        date = shape.start(_DATE)
        spans = [(date, date + 4), (date + 5, date + 7), (date + 8, date + 10)]
        spans += [shape.span(group) for group in (_HOUR, _MINUTE, _SECOND)]
        start, end = shape.span(_FRACTION)
        # Past microseconds the digits are cut, not rounded; fewer are padded with zeros.
        kept = (start, min(end, start + 6)) if start >= 0 else (0, 0)
        spans += [kept, *(shape.span(group) for group in (_OFFSET_HOUR, _OFFSET_MINUTE))]
        scale = [1] * 6 + [10 ** (6 - (kept[1] - kept[0]))] + [1] * 2
        weights = [
            [(column, 10 ** (last - 1 - column) * factor) for column in range(first, last)]
            for (first, last), factor in zip(spans, scale, strict=True)
        ]
        for first, last in [*spans, (start, end)]:
            low[first:last], high[first:last] = _ZERO, _ZERO + 9
        if len(_LAYOUTS) >= _LAYOUTS_KEPT:
            _LAYOUTS.clear()
        _LAYOUTS[key] = (low, high, weights)
    return _LAYOUTS[key]
