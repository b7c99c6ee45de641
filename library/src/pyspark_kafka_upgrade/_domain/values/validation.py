"""Rules for names and durations, shared by the template's input hook and the pipeline.

This module is pure and imports only the standard library: the template's pre-generation
hook loads it by file path to validate answers before any file is written, so the rules a
project is generated with are exactly the rules its configuration is checked with later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MS_PER_UNIT = {
    "microsecond": None,  # finer than the millisecond arithmetic of the planner; refused below
    "millisecond": 1,
    "second": 1_000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}
# Months and years have no fixed length, and Spark refuses them in window durations.
_CALENDAR_UNITS = {"month", "year"}
# ASCII digits and spaces only: Spark's parser knows no other, though Python's \d and \s do.
_PAIR = re.compile(r"([+-]?[0-9]+)[ \t]+([a-zA-Z]+)", re.ASCII)
# Spark keeps an interval's time part in a signed 64-bit count of microseconds.
MAX_INTERVAL_MS = (2**63 - 1) // 1000
_BLANKS = " \t"

KAFKA_TOPIC_MAX_LENGTH = 249
_KAFKA_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")


class InvalidValueError(ValueError):
    """A value breaks a rule; the message states the rule and gives an example.

    ``field`` names the setting at fault when a rule spans several settings.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InvalidIntervalError(InvalidValueError):
    """Text that is not a Spark interval this pipeline can reason about."""


class InvalidTopicNameError(InvalidValueError):
    """A Kafka topic name that a broker would refuse."""


def parse_interval_ms(text: str) -> int:
    """Parse a Spark interval string such as ``"10 minutes"`` or ``"1 hour 30 minutes"``.

    Returns the length in milliseconds. Accepts an optional leading ``interval`` keyword,
    singular or plural unit names, and any case, as Spark does.
    """
    body = text.strip(_BLANKS)
    if body.lower().startswith("interval "):
        body = body[len("interval ") :].strip(_BLANKS)
    if not body:
        raise InvalidIntervalError(
            f"{text!r} is not a Spark interval: it is empty (use e.g. '10 minutes')"
        )
    total_ms = 0
    position = 0
    for match in _PAIR.finditer(body):
        if body[position : match.start()].strip(_BLANKS):
            break
        total_ms += _pair_to_ms(text, int(match.group(1)), match.group(2))
        position = match.end()
    if abs(total_ms) > MAX_INTERVAL_MS:
        raise InvalidIntervalError(f"{text!r} is longer than Spark can represent")
    if body[position:].strip(_BLANKS) or position == 0:
        raise InvalidIntervalError(
            f"{text!r} is not a Spark interval: expected '<number> <unit>' pairs "
            "(use e.g. '10 minutes' or '1 hour 30 minutes')"
        )
    return total_ms


def _pair_to_ms(text: str, amount: int, raw_unit: str) -> int:
    unit = raw_unit.lower().removesuffix("s")
    if unit in _CALENDAR_UNITS:
        raise InvalidIntervalError(
            f"{text!r} uses {raw_unit!r}, which has no fixed length; "
            "use weeks, days, hours, minutes, seconds or milliseconds"
        )
    if unit not in _MS_PER_UNIT:
        raise InvalidIntervalError(
            f"{text!r} is not a Spark interval: unknown unit {raw_unit!r} "
            "(use weeks, days, hours, minutes, seconds or milliseconds)"
        )
    factor = _MS_PER_UNIT[unit]
    if factor is None:
        raise InvalidIntervalError(
            f"{text!r} is finer than a millisecond; event time is reasoned about in milliseconds"
        )
    return amount * factor


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """An event-time window and its watermark delay, in milliseconds.

    ``slide_ms`` equals ``duration_ms`` for tumbling windows.
    """

    duration_ms: int
    slide_ms: int
    watermark_delay_ms: int

    @property
    def is_tumbling(self) -> bool:
        return self.slide_ms == self.duration_ms


def window_spec(duration: str, slide: str, watermark_delay: str) -> WindowSpec:
    """Build a :class:`WindowSpec` from Spark interval strings; an empty slide means tumbling.

    Raises :class:`InvalidIntervalError` whose ``field`` is ``duration``, ``slide`` or
    ``watermark_delay``.
    """
    duration_ms = _interval_field("duration", duration)
    if duration_ms <= 0:
        raise InvalidIntervalError(
            f"window duration {duration!r} must be positive", field="duration"
        )
    slide_ms = duration_ms
    if slide.strip():
        slide_ms = _interval_field("slide", slide)
        if slide_ms <= 0:
            raise InvalidIntervalError(f"window slide {slide!r} must be positive", field="slide")
        if slide_ms > duration_ms:
            raise InvalidIntervalError(
                f"window slide {slide!r} is longer than the window {duration!r}; "
                "events between windows would be counted nowhere",
                field="slide",
            )
    delay_ms = _interval_field("watermark_delay", watermark_delay)
    if delay_ms < 0:
        raise InvalidIntervalError(
            f"watermark delay {watermark_delay!r} must not be negative", field="watermark_delay"
        )
    return WindowSpec(duration_ms=duration_ms, slide_ms=slide_ms, watermark_delay_ms=delay_ms)


def _interval_field(field: str, text: str) -> int:
    try:
        return parse_interval_ms(text)
    except InvalidIntervalError as error:
        raise InvalidIntervalError(str(error), field=field) from None


def check_kafka_topic(name: str) -> str:
    """Return ``name`` if Kafka accepts it as a topic name, else raise InvalidTopicNameError."""
    if name in {".", ".."}:
        raise InvalidTopicNameError(f"Kafka topic {name!r} is reserved; '.' and '..' are refused")
    if not name or len(name) > KAFKA_TOPIC_MAX_LENGTH:
        raise InvalidTopicNameError(
            f"Kafka topic {name!r} must be 1 to {KAFKA_TOPIC_MAX_LENGTH} characters long"
        )
    if not _KAFKA_TOPIC_CHARS.fullmatch(name):
        raise InvalidTopicNameError(
            f"Kafka topic {name!r} may only contain ASCII letters, digits, '.', '_' and '-'"
        )
    return name


# The aggregate functions a metric may use. Each maps an events column (or * for count) to
# one value per window and key; all of them are supported by Spark's streaming aggregation.
METRIC_FUNCTIONS = ("count", "sum", "min", "max", "avg", "approx_count_distinct")
_METRIC = re.compile(r"([a-z_]+)\(\s*(\*|[A-Za-z_][A-Za-z0-9_]*)\s*\)", re.ASCII)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


class InvalidMetricError(InvalidValueError):
    """A metric definition outside the small grammar ``function(column)``."""


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One aggregate column of the output: ``name = function(column)``.

    ``column`` is ``*`` only for ``count``. The text is parsed, never evaluated, so a
    configuration value can never run code.
    """

    name: str
    function: str
    column: str

    @property
    def expression(self) -> str:
        return f"{self.function}({self.column})"


def check_identifier(text: str, what: str) -> str:
    """Return ``text`` if it is a plain column name (ASCII letters, digits, underscores)."""
    if not _IDENTIFIER.fullmatch(text):
        raise InvalidValueError(
            f"{what} {text!r} must be a plain column name: ASCII letters, digits and "
            "underscores, not starting with a digit"
        )
    return text


def parse_metric(name: str, definition: str) -> MetricSpec:
    """Parse ``definition`` such as ``"count(*)"`` or ``"approx_count_distinct(user_id)"``."""
    check_identifier(name, "metric name")
    match = _METRIC.fullmatch(definition.strip())
    if match is None:
        raise InvalidMetricError(
            f"metric {name} = {definition!r} must look like function(column), "
            f"e.g. count(*) or max(user_id); functions: {', '.join(METRIC_FUNCTIONS)}"
        )
    function, column = match.group(1), match.group(2)
    if function not in METRIC_FUNCTIONS:
        raise InvalidMetricError(
            f"metric {name} = {definition!r} uses unknown function {function!r}; "
            f"use one of {', '.join(METRIC_FUNCTIONS)}"
        )
    if column == "*" and function != "count":
        raise InvalidMetricError(f"metric {name} = {definition!r}: only count takes *")
    return MetricSpec(name=name, function=function, column=column)


# A part of a table name: a plain identifier, or any text but a backquote between backquotes
# (Unity Catalog's names may hold hyphens, e.g. `my-catalog`).
_NAME_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|`[^`]+`", re.ASCII)


def table_name_parts(text: str) -> tuple[str, ...]:
    """The parts of a catalog table name, ``schema.table`` or ``catalog.schema.table``, as
    written (backquotes kept); InvalidValueError when it is not one."""
    parts: list[str] = []
    position, whole = 0, False
    while (match := _NAME_PART.match(text, position)) is not None:
        parts.append(match.group())
        position = match.end()
        whole = position == len(text)
        if whole or text[position] != ".":
            break
        position += 1
    if not whole or not 2 <= len(parts) <= 3:
        raise InvalidValueError(
            f"{text!r} is not a table name: give schema.table or catalog.schema.table, each "
            "part ASCII letters, digits and underscores not starting with a digit, or any "
            "text but a backquote between backquotes (e.g. main.analytics.page_view_counts)"
        )
    return tuple(parts)
