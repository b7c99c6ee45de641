"""What a run starts, as data: its phases, and in each the queries with their frames.

Two streaming queries share one generation:
  - ``aggregates``: Kafka -> parse -> observe(batch metrics) -> valid events -> watermark ->
    windows -> append to the generation's output. The ledger records its batches.
  - ``quarantine``: Kafka -> parse -> malformed records -> append to the generation's
    quarantine, so that no malformed record is ever dropped silently.
Each has its own checkpoint, so each restarts exactly where it committed. The supervisor
starts what this module builds; nothing here starts a query.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession

from ..generation.layout import GenerationLayout
from ..ledger.listener import BatchMetricNames
from ..settings import Settings
from ..sink.formats import SinkFormat
from ..sink.writer import Trigger
from ..source.connector import read_kafka_stream
from ..transformations import aggregation, columns, parsing
from ..transformations.columns import TimeSource
from ..values.validation import MetricSpec, WindowSpec
from .run_bookkeeping import GenerationStart

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
    """One streaming query: its frame and where it appends."""

    name: str
    frame: DataFrame
    path: str
    checkpoint: str
    file_format: SinkFormat
    trigger: Trigger


@dataclass(frozen=True, slots=True)
class Phase:
    """Queries started together. The next phase starts only once this one ran to its end."""

    queries: tuple[QuerySpec, ...]
    note: str | None = None  # a line for the run's banner


@dataclass(frozen=True, slots=True)
class _Recipe:
    """How the frames are built, read from the settings once."""

    time_source: TimeSource
    time_field: str
    max_value_bytes: int
    window: WindowSpec
    keys: tuple[str, ...]
    metrics: tuple[MetricSpec, ...]

    @classmethod
    def of(cls, settings: Settings) -> _Recipe:
        events = settings.events
        return cls(
            time_source=events.time_source,
            time_field=events.time_field,
            max_value_bytes=events.max_value_bytes,
            window=settings.window.spec,
            keys=tuple(settings.aggregation.keys),
            metrics=settings.aggregation.metric_specs,
        )


# The replay must run as one batch with whatever has arrived since: split by a rate limit, a
# partition that races ahead would raise the new query's watermark and make replayed events
# of a lagging partition late, though the old generation counted them. So a rate-limited
# generation first runs its replay alone, unlimited and "available now" (one batch), then
# restarts on the same checkpoint with its limit.
_REPLAY_NOTE = "  rate limit  off for the replay batch, which runs on its own; on again after it"


def run_phases(
    spark: SparkSession,
    settings: Settings,
    layout: GenerationLayout,
    start: GenerationStart,
    *,
    available_now: bool,
    replaying: bool,
) -> list[Phase]:
    """The phases of a run: the replay batch alone when it must be, then both queries."""
    recipe = _Recipe.of(settings)
    trigger = Trigger(interval=settings.sink.trigger_interval, available_now=available_now)
    sink, kafka = settings.sink.format, settings.kafka
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
    frame = aggregates_frame(raw, recipe, start)
    aggregates = QuerySpec(AGGREGATES_QUERY, frame, layout.output, layout.checkpoint, sink, trigger)
    quarantine = QuerySpec(
        QUARANTINE_QUERY,
        parsing.quarantine_records(_parse(raw_quarantine, recipe)),
        layout.quarantine,
        layout.quarantine_checkpoint,
        sink,
        trigger,
    )
    steady = Phase((aggregates, quarantine))
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
        frame=aggregates_frame(unlimited, recipe, start),
        trigger=replace(trigger, available_now=True),
    )
    return [Phase((replay,), note=_REPLAY_NOTE), steady]


def aggregates_frame(raw: DataFrame, recipe: _Recipe, start: GenerationStart) -> DataFrame:
    parsed = parsing.observe_batch_metrics(_parse(raw, recipe))
    return aggregation.windowed_aggregates(
        parsing.valid_events(parsed),
        window=recipe.window,
        keys=recipe.keys,
        metrics=recipe.metrics,
        replay_after_ms=start.replay_after_ms,
        replay_from_event_ms=start.replay_from_event_ms,
    )


def _parse(raw: DataFrame, recipe: _Recipe) -> DataFrame:
    """Kafka rows into events or quarantined records, as the settings say to parse them."""
    return parsing.parse_events(
        raw,
        time_source=recipe.time_source,
        time_field=recipe.time_field,
        max_value_bytes=recipe.max_value_bytes,
    )
