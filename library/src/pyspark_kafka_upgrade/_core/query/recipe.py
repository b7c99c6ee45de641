"""How a generation's frames are built: the settings and the plan read once, for the steps.

The project's query module receives a :class:`Recipe` and passes it to the library's steps
(``spark.steps``), so the steps read nothing themselves: the same recipe gives the same
frames, in a run, a test or a benchmark.

``REPLAY_STEPS`` are the steps every windowed query must apply, even where the filter is
empty: a generation started from a plan relies on them to write nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark_kafka_upgrade._core.query.columns import TimeSource
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.values.project import EventField
from pyspark_kafka_upgrade._domain.values.validation import MetricSpec, WindowSpec

REPLAY_STEPS = ("drop_counted_events", "drop_written_windows")


@dataclass(frozen=True, slots=True)
class Parsing:
    """How the records are parsed: the pipeline's own rules, from its settings. ``verify``
    parses with them alone, to recompute what the stream did."""

    events: tuple[EventField, ...]
    time_source: TimeSource
    time_field: str
    max_value_bytes: int


@dataclass(frozen=True, slots=True)
class Recipe(Parsing):
    window: WindowSpec
    keys: tuple[str, ...]
    metrics: tuple[MetricSpec, ...]
    # What a generation started from a plan leaves out; none otherwise.
    replay: ReplayFilter = field(default_factory=ReplayFilter)
    # The replay filter's steps record here that the query applied them: a run refuses a
    # query that left one out, whose next generation would write windows twice.
    applied: set[str] = field(default_factory=set, compare=False, repr=False)
