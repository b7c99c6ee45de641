"""The new generation's replay filter: which (event, window) pairs earlier generations counted.

Same window spec: drop the pairs whose window ends at or before W, which the old generation
wrote (``window.end > W``). New window spec: the grids no longer line up, so the generations
split in event time at E, the end of the last window the old one wrote
(``event_time >= E``). An event-time split of an earlier window change is carried on into
every later generation, so a filter may hold both bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Self

from pyspark_kafka_upgrade._domain.records.record_errors import PlanningError
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.windows import (
    earliest_open_event_ms,
    last_written_window_end_ms,
)
from pyspark_kafka_upgrade._domain.values.words import watermark_text, when

_TERM = re.compile(r"(window\.end > |event_time >= )(-?[0-9]+)")
NO_FILTER = "none"


@dataclass(frozen=True, slots=True)
class ReplayFilter:
    """What a generation started from a plan drops, for its whole life: one value, one text.

    Its JSON form is its description, ``window.end > W``, ``event_time >= E``, both joined by
    ``and``, or ``none``, so a reviewer reads the filter exactly as the query applies it.
    """

    window_end_after_ms: int | None = None  # drop (event, window) pairs with end <= this
    event_time_from_ms: int | None = None  # drop events before this

    @classmethod
    def for_upgrade(
        cls,
        watermark_ms: int,
        old_window: WindowSpec,
        new_window: WindowSpec,
        carried: ReplayFilter | None = None,
    ) -> Self:
        """The filter of a generation that follows one stopped at W with ``old_window``.

        ``carried`` is the filter of the old generation itself, if it started from a plan.
        """
        changed = (old_window.duration_ms, old_window.slide_ms) != (
            new_window.duration_ms,
            new_window.slide_ms,
        )
        floor = None if carried is None else carried.event_time_from_ms
        after, from_event = replay_filter_bounds(watermark_ms, old_window, changed, floor)
        return cls(window_end_after_ms=after, event_time_from_ms=from_event)

    @property
    def active(self) -> bool:
        return self.window_end_after_ms is not None or self.event_time_from_ms is not None

    def late_before_event_ms(self, window: WindowSpec) -> int | None:
        """The event time before which this filter drops a record of ``window``'s spec whole."""
        return late_event_threshold_ms(window, self.window_end_after_ms, self.event_time_from_ms)

    def describe(self) -> str:
        return self._terms(named=False)

    def explain(self) -> str:
        """The description for people: each bound keeps its number, as ``describe`` and the
        JSON have it (scripts may parse it), and is named W or E with its UTC time."""
        return self._terms(named=True)

    def _terms(self, *, named: bool) -> str:
        terms = []
        if (ms := self.event_time_from_ms) is not None:
            terms.append(f"event_time >= {ms}" + (f" (E = {when(ms)})" if named else ""))
        if (ms := self.window_end_after_ms) is not None:
            # A watermark Spark has not moved is 0: "not yet set", never a time in 1970.
            terms.append(f"window.end > {ms}" + (f" (W = {watermark_text(ms)})" if named else ""))
        return " and ".join(terms) or NO_FILTER

    @classmethod
    def parse(cls, text: object) -> Self:
        """The filter a description names: its JSON form, read back."""
        if not isinstance(text, str):
            raise PlanningError(f"a replay filter is a text, got {type(text).__name__}")
        if text == NO_FILTER:
            return cls()
        bounds: dict[str, int] = {}
        for term in text.split(" and "):
            match = _TERM.fullmatch(term)
            if match is None or match.group(1) in bounds:
                raise PlanningError(
                    f"replay filter {text!r} is not of the form 'event_time >= E', "
                    "'window.end > W', both joined by ' and ', or 'none'"
                )
            bounds[match.group(1)] = int(match.group(2))
        made = cls(
            window_end_after_ms=bounds.get("window.end > "),
            event_time_from_ms=bounds.get("event_time >= "),
        )
        if made.describe() != text:
            raise PlanningError(f"replay filter {text!r} is not in canonical order")
        return made


def replay_filter_bounds(
    watermark_ms: int, old_window: WindowSpec, window_changed: bool, event_floor_ms: int | None
) -> tuple[int | None, int | None]:
    """The new generation's replay filter: (replay_after_ms, replay_from_event_ms).

    Same window: drop the (event, window) pairs of windows ending at or before W, which
    earlier generations wrote. New window: the grids no longer line up, so split in event
    time where the written windows end (T_min for tumbling windows): every event before it
    was counted in a written window, none after it. An event-time floor of an earlier
    window change is carried on either way: the events before it belong to generations
    before the old one.
    """
    if not window_changed:
        return watermark_ms, event_floor_ms
    split = last_written_window_end_ms(watermark_ms, old_window)
    return None, split if event_floor_ms is None else max(split, event_floor_ms)


def late_event_threshold_ms(
    window: WindowSpec, replay_after_ms: int | None, replay_from_event_ms: int | None
) -> int | None:
    """The event time before which the new generation's replay filter drops a record whole.

    ``window.end > replay_after_ms`` drops an event from every window exactly when its
    latest window ends at or before ``replay_after_ms``: when it is before T_min of that
    watermark (for sliding windows, an event with one window still open counts there).
    ``event_time >= replay_from_event_ms`` drops it before any window. None: no filter.
    """
    bounds = []
    if replay_after_ms is not None:
        bounds.append(earliest_open_event_ms(replay_after_ms, window))
    if replay_from_event_ms is not None:
        bounds.append(replay_from_event_ms)
    return max(bounds) if bounds else None
