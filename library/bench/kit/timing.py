"""Side-by-side measurement: a warm-up, then rounds that alternate the order of the sides."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from bench.record import Series

T = TypeVar("T")


def side_by_side(
    sides: Mapping[str, Callable[[], T]],
    rounds: int,
    *,
    warmup: int = 1,
    say: Callable[[str], None] = lambda line: None,
) -> dict[str, list[T]]:
    """Each side's measurement per round, after ``warmup`` untimed rounds of every side.

    The order flips every round, so that no side always runs on the warmer JVM or the
    fuller page cache.
    """
    names = list(sides)
    for number in range(warmup):
        say(f"warm-up {number + 1}/{warmup}: {', '.join(names)}")
        for name in names:
            sides[name]()
    measured: dict[str, list[T]] = {name: [] for name in names}
    for number in range(rounds):
        order = names if number % 2 == 0 else names[::-1]
        say(f"round {number + 1}/{rounds}: {', '.join(order)}")
        for name in order:
            measured[name].append(sides[name]())
    return measured


def ratios(numerator: Sequence[float], denominator: Sequence[float]) -> Series:
    """Round by round: each ratio divides two values measured side by side."""
    return Series(tuple(a / b for a, b in zip(numerator, denominator, strict=True)))


def timed(action: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result
