"""Side-by-side measurement: warm-up left out, the order alternating round by round."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bench.kit.timing import ratios, side_by_side
from bench.record import Series


def test_rounds_alternate_the_order_and_the_warm_up_is_not_kept() -> None:
    calls: list[str] = []
    values = iter(range(1, 100))

    def side(name: str) -> Callable[[], float]:
        def measure() -> float:
            calls.append(name)
            return float(next(values))

        return measure

    measured = side_by_side({"a": side("a"), "b": side("b")}, 3, warmup=1)

    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    # Values 1 and 2 were the warm-up's.
    assert measured == {"a": [3.0, 6.0, 7.0], "b": [4.0, 5.0, 8.0]}


def test_ratios_divide_the_values_of_the_same_round() -> None:
    assert ratios([2.0, 3.0], [1.0, 2.0]) == Series((2.0, 1.5))
    with pytest.raises(ValueError):
        ratios([1.0], [1.0, 2.0])
