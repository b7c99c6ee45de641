"""How the CLI writes an epoch-millisecond instant for people: ISO 8601, UTC, with a Z."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_utc(epoch_ms: int) -> str:
    """``1763807680000`` -> ``2025-11-22T10:34:40.000Z``."""
    # timedelta keeps whole milliseconds exact, where a float of seconds may round.
    moment = _EPOCH + timedelta(milliseconds=epoch_ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
