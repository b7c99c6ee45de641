"""What a run starts, as data: its phases, and in each the queries with their frames.

Two streaming queries share one generation, each built by the project's query module:
  - ``aggregates``: Kafka -> ``windowed_aggregates`` (parse, observe the batch metrics,
    watermark, windows, replay filter, aggregate) -> append to the generation's output,
    through the settings' ``Sink``. The ledger records its batches.
  - ``quarantine``: Kafka -> ``malformed_records`` -> append to the generation's
    quarantine (the same kind of sink), so that no malformed record is ever dropped
    silently.
Each has its own checkpoint, so each restarts exactly where it committed. The supervisor
starts what this module builds; nothing here starts a query.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import ModuleType

from pyspark.sql import DataFrame, SparkSession

from pyspark_kafka_upgrade._adapters.kafka.connector import read_kafka_stream
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.spark.aggregation import keep_windows_through
from pyspark_kafka_upgrade._adapters.spark.listener import BatchMetricNames
from pyspark_kafka_upgrade._application.run.bookkeeping import GenerationStart
from pyspark_kafka_upgrade._core.query import columns
from pyspark_kafka_upgrade._core.query.recipe import REPLAY_STEPS, Recipe
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.sink import Sink, Trigger
from pyspark_kafka_upgrade._domain.values.clock import iso_utc
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout

AGGREGATES_QUERY = "aggregates"
QUARANTINE_QUERY = "quarantine"
METRICS = BatchMetricNames(
    observation=columns.BATCH_METRICS,
    input_rows=columns.INPUT_ROWS,
    malformed_rows=columns.MALFORMED_ROWS,
    min_event_time_us=columns.MIN_EVENT_TIME_US,
    max_event_time_us=columns.MAX_EVENT_TIME_US,
)


@dataclass(frozen=True, slots=True)
class QuerySpec:
    """One streaming query: its frame, and the sink it appends to as ``generation``."""

    name: str
    frame: DataFrame
    sink: Sink
    generation: int
    checkpoint: str
    trigger: Trigger


@dataclass(frozen=True, slots=True)
class Phase:
    """Queries started together. The next phase starts only once this one ran to its end."""

    queries: tuple[QuerySpec, ...]
    note: str | None = None  # a line for the run's banner


class ReplayFilterMissingError(ConfigError):
    """The project's query left out a step of the replay filter."""


def windowed_aggregates(query: ModuleType, raw: DataFrame, recipe: Recipe) -> DataFrame:
    """The project's windowed query, refused when it left out a step of the replay filter:
    the next generation an upgrade starts would write windows twice (it is checked now,
    before anything runs, even where this generation's filter is empty)."""
    built = replace(recipe, applied=set())
    frame: DataFrame = query.windowed_aggregates(raw, built)
    missing = [step for step in REPLAY_STEPS if step not in built.applied]
    if missing:
        raise ReplayFilterMissingError(
            f"{query.__name__}.windowed_aggregates does not apply the replay filter "
            f"({', '.join(f'steps.{step}' for step in missing)}): a generation started from "
            "an upgrade plan would write windows twice. Apply both steps, as the reference "
            "query does"
        )
    return frame


def recipe_of(settings: Settings, start: GenerationStart) -> Recipe:
    """How the frames are built, read from the settings and the plan once."""
    events = settings.events
    return Recipe(
        events=settings.project.events,
        time_source=events.time_source,
        time_field=events.time_field,
        max_value_bytes=events.max_value_bytes,
        window=settings.window.spec,
        keys=tuple(settings.aggregation.keys),
        metrics=settings.aggregation.metric_specs,
        replay=ReplayFilter() if start.plan is None else start.plan.replay_filter,
    )


# The replay must run as one batch with whatever has arrived since: split by a rate limit, a
# partition that races ahead would raise the new query's watermark and make replayed events
# of a lagging partition late, though the old generation counted them. So a rate-limited
# generation first runs its replay alone, unlimited and "available now" (one batch), then
# restarts on the same checkpoint with its limit.
_REPLAY_NOTE = "  rate limit  off for the replay batch, which runs on its own; on again after it"


def _bounded_note(boundary_ms: int) -> str:
    return (
        f"  handoff     writes the windows ending at or before C = {iso_utc(boundary_ms)}, "
        "then stops; the next generation writes the rest"
    )


def run_phases(
    spark: SparkSession,
    settings: Settings,
    layout: GenerationLayout,
    start: GenerationStart,
    *,
    available_now: bool,
    replaying: bool,
    bounded_to_ms: int | None = None,
) -> list[Phase]:
    """The phases of a run: the replay batch alone when it must be, then both queries.

    ``bounded_to_ms``: C of a handoff the generation took. It writes only the windows ending
    at or before C, and its quarantine has stopped for good (the new generation's goes on).
    """
    recipe = recipe_of(settings, start)
    query = settings.project.query_module()
    trigger = Trigger(interval=settings.sink.trigger_interval, available_now=available_now)
    kafka = settings.kafka
    output = open_sink(settings.sink, layout.root)
    quarantined = open_sink(settings.sink, layout.root, quarantine=True)
    raw = read_kafka_stream(
        spark,
        kafka,
        starting_offsets=start.starting_offsets,
        initial_offsets_location=layout.initial_offsets,
    )
    # The quarantine is stateless: it goes on exactly where the generation before stopped.
    raw_quarantine = read_kafka_stream(
        spark,
        kafka,
        starting_offsets=start.quarantine_offsets,
        initial_offsets_location=layout.quarantine_initial_offsets,
    )
    bounded = bounded_to_ms is not None

    def written(frame: DataFrame) -> DataFrame:
        return keep_windows_through(frame, through_ms=bounded_to_ms) if bounded else frame

    frame = written(windowed_aggregates(query, raw, recipe))
    generation = layout.generation
    aggregates = QuerySpec(AGGREGATES_QUERY, frame, output, generation, layout.checkpoint, trigger)
    quarantine = QuerySpec(
        QUARANTINE_QUERY,
        query.malformed_records(raw_quarantine, recipe),
        quarantined,
        generation,
        layout.quarantine_checkpoint,
        trigger,
    )
    steady = (
        Phase((aggregates,), note=_bounded_note(bounded_to_ms))
        if bounded_to_ms is not None
        else Phase((aggregates, quarantine))
    )
    if not (replaying and kafka.max_offsets_per_trigger):
        return [steady]
    unlimited = read_kafka_stream(
        spark,
        replace(kafka, max_offsets_per_trigger=0),
        starting_offsets=start.starting_offsets,
        initial_offsets_location=layout.initial_offsets,
    )
    replay = replace(
        aggregates,
        frame=written(windowed_aggregates(query, unlimited, recipe)),
        trigger=replace(trigger, available_now=True),
    )
    return [Phase((replay,), note=_REPLAY_NOTE), steady]
