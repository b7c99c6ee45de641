"""Time, read one way: the wall clock in epoch milliseconds, and how people read an instant.

Every record the pipeline writes (ledger, plan, run lock) stamps ``now_ms()``; the CLI
shows an instant as ISO 8601, UTC, with a Z.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_utc(epoch_ms: int) -> str:
    """``1763807680000`` -> ``2025-11-22T10:34:40.000Z``."""
    # timedelta keeps whole milliseconds exact, where a float of seconds may round.
    moment = _EPOCH + timedelta(milliseconds=epoch_ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_ms() -> int:
    """The wall clock, in milliseconds since the epoch: what records are stamped with."""
    # time_ns, not time.time() * 1000: a float of seconds loses exactness at this size.
    return time.time_ns() // 1_000_000
