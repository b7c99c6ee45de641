"""Event times, durations and batch ids as the upgrade's sentences write them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def when(ms: int) -> str:
    """An event time as UTC ISO-8601, with milliseconds only when it has some."""
    try:
        moment = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} ms"
    text = moment.replace(tzinfo=None).isoformat(timespec="seconds")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return text + "Z"


def watermark_text(ms: int) -> str:
    """A watermark as people read it: Spark's is 0 until a batch with events moves it, and
    1970-01-01 would read as a time the pipeline saw."""
    return "not yet set" if ms <= 0 else when(ms)


def describe_window(window: WindowSpec) -> str:
    size = duration(window.duration_ms)
    delay = duration(window.watermark_delay_ms)
    if window.is_tumbling:
        return f"tumbling windows of {size}, watermark delay {delay}"
    return f"windows of {size} sliding every {duration(window.slide_ms)}, watermark delay {delay}"


def duration(ms: int) -> str:
    for unit, length in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000)):
        if ms and ms % length == 0:
            count = ms // length
            return f"{count} {unit}{'s' if count != 1 else ''}"
    if ms and ms % 1000 == 0:
        return f"{ms // 1000} s"
    return f"{ms} ms"


def id_ranges(batch_ids: list[int]) -> str:
    """Ascending ids as ranges: ``3-5, 9`` for [3, 4, 5, 9]."""
    parts: list[str] = []
    first = previous = batch_ids[0]
    for batch_id in [*batch_ids[1:], None]:
        if batch_id is not None and batch_id == previous + 1:
            previous = batch_id
            continue
        parts.append(str(first) if first == previous else f"{first}-{previous}")
        if batch_id is not None:
            first = previous = batch_id
    return ", ".join(parts)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns left-aligned to their widest cell, two spaces apart, no trailing blanks."""
    widths = [max(len(row[i]) for row in (headers, *rows)) for i in range(len(headers))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (headers, *rows)
    ]
