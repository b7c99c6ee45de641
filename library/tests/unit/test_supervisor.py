"""The run's loop, on stand-in queries: phases in order, and every started query stopped."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from pyspark_kafka_upgrade._application.run.queries import (
    Phase,
    QuerySpec,
)
from pyspark_kafka_upgrade._application.run.supervisor import (
    Supervision,
    supervise,
)
from pyspark_kafka_upgrade._domain.records.sink import (
    Trigger,
)


@dataclass
class StandInQuery:
    """A streaming query that ends on its own after ``polls`` waits, or never (None)."""

    name: str
    polls: int | None = None
    stopped: bool = False
    recentProgress: list[dict[str, Any]] = field(default_factory=list)
    lastProgress: dict[str, Any] | None = None
    status: dict[str, Any] = field(default_factory=lambda: {"isTriggerActive": False})

    @property
    def isActive(self) -> bool:
        return not self.stopped and (self.polls is None or self.polls > 0)

    def awaitTermination(self, timeout: float) -> None:
        if self.polls is not None:
            self.polls -= 1

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        self.stopped = True


@dataclass
class StandInSpark:
    listeners: list[object] = field(default_factory=list)

    @property
    def streams(self) -> StandInSpark:
        return self

    def addListener(self, listener: object) -> None:
        self.listeners.append(listener)

    def removeListener(self, listener: object) -> None:
        self.listeners.remove(listener)


@dataclass
class StandInLock:
    lost: bool = False


@dataclass
class StandInSink:
    """A sink whose queries ``starts`` makes, by query name."""

    starts: Callable[[str], StandInQuery]

    def start(self, frame: object, *, query_name: str, **_: object) -> StandInQuery:
        return self.starts(query_name)


def spec(name: str, starts: Callable[[str], StandInQuery]) -> QuerySpec:
    sink = cast(Any, StandInSink(starts))
    return QuerySpec(name, cast(Any, None), sink, 1, f"cp/{name}", Trigger())


def watch(stop: threading.Event | None = None) -> Supervision:
    return Supervision(
        stop=stop or threading.Event(),
        run_lock=cast(Any, StandInLock()),
        listeners=(cast(Any, object()),),
    )


def test_a_query_started_before_its_sibling_failed_to_start_is_stopped() -> None:
    started: list[StandInQuery] = []

    def start(query_name: str) -> StandInQuery:
        if query_name == "second":
            raise RuntimeError("cannot start")
        started.append(StandInQuery(query_name))
        return started[-1]

    spark = StandInSpark()
    with pytest.raises(RuntimeError, match="cannot start"):
        supervise(cast(Any, spark), [Phase((spec("first", start), spec("second", start)))], watch())
    assert [(q.name, q.stopped) for q in started] == [("first", True)]
    assert spark.listeners == []


def test_the_next_phase_starts_only_after_the_first_ran_to_its_end() -> None:
    queries = {"replay": StandInQuery("replay", polls=2), "steady": StandInQuery("steady", polls=1)}
    order: list[str] = []

    def start(query_name: str) -> StandInQuery:
        order.append(query_name)
        return queries[query_name]

    phases = [Phase((spec("replay", start),)), Phase((spec("steady", start),))]
    outcome = supervise(cast(Any, StandInSpark()), phases, watch())
    assert order == ["replay", "steady"]
    assert outcome.stopped_by == "end of input"
    # Stopped, not only ended: Spark forgets a query's name only then, and the next phase
    # starts a query of the same name.
    assert queries["replay"].stopped


def test_a_stop_request_during_the_first_phase_starts_no_other() -> None:
    stop = threading.Event()
    order: list[str] = []

    def start(query_name: str) -> StandInQuery:
        order.append(query_name)
        stop.set()  # as a signal handler would, while the query runs
        return StandInQuery(query_name)

    phases = [Phase((spec("replay", start),)), Phase((spec("steady", start),))]
    outcome = supervise(cast(Any, StandInSpark()), phases, watch(stop))
    assert order == ["replay"]
    assert outcome.stopped_by == "stop request"
