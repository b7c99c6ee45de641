"""Deadline-based polling for tests.

Tests must never sleep for a fixed time and hope the system has caught up: that is slow when
things are fast and flaky when they are slow. Instead they poll a condition until it holds or
a deadline passes, the way Spark's own PySpark Kafka tests do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar, overload

T = TypeVar("T")


# Without the first overload, mypy solves T as Never for a plain predicate and then treats
# every statement after the call as unreachable, silently skipping its type checks.
@overload
def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    interval: float = ...,
    message: str,
) -> bool: ...


@overload
def wait_until(
    condition: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = ...,
    message: str,
) -> T: ...


def wait_until(
    condition: Callable[[], T | bool | None],
    *,
    timeout: float,
    interval: float = 0.1,
    message: str,
) -> T | bool:
    """Poll ``condition`` until it returns a truthy value, and return that value.

    The condition is always evaluated at least once, even with ``timeout=0``, and once more
    at the deadline, so a condition that becomes true just before the deadline is not missed.
    Exceptions raised by the condition propagate immediately: a condition that wants to
    tolerate transient errors must catch them itself and return a falsy value.

    Raises:
        TimeoutError: the condition stayed falsy for ``timeout`` seconds. The error names
            ``message`` and the time actually waited.
    """
    if timeout < 0:
        raise ValueError(f"timeout must be >= 0, got {timeout}")
    if interval <= 0:
        raise ValueError(f"interval must be > 0, got {interval}")
    # monotonic, not time.time(): a wall-clock jump (NTP) must not shorten or stretch the wait.
    start = time.monotonic()
    deadline = start + timeout
    while True:
        result = condition()
        if result:
            return result
        now = time.monotonic()
        if now >= deadline:
            raise TimeoutError(f"{message} (gave up after {now - start:.2f}s)")
        time.sleep(min(interval, deadline - now))
