"""Instants as people type them on a command line: ISO-8601, UTC unless they say otherwise."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_instant(text: str) -> int:
    """Milliseconds since the epoch of ``text``, such as ``2026-11-26T09:00:00Z``.

    A time without an offset is UTC, as the pipeline's windows are; a bare date is its
    midnight.
    """
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO-8601 time; e.g. 2026-11-26T09:00:00Z or 2026-11-26"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)
