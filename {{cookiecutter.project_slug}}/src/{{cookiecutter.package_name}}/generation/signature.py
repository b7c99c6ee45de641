"""The signature of the job the current code and settings build, derived without Spark.

`run` records it when a generation starts; `upgrade plan` and `apply` compare it with the one
the old generation recorded. The output schema comes from ``aggregate_types``, whose table of
Spark's type rules a unit test checks against Spark itself, so no command needs a JVM for
it. The Spark version is the running session's when there is one, else the installed
pyspark's.
"""

from __future__ import annotations

import pyspark

from ..planner.signature import OUTPUT_MODE, Aggregate, Column, PipelineSignature, SourceSignature
from ..settings import Settings
from ..transformations import aggregate_types, events
from .layout import GenerationLayout


def derive_signature(
    settings: Settings, layout: GenerationLayout, *, spark_version: str | None = None
) -> PipelineSignature:
    """The signature of the job these settings build for ``layout``'s generation."""
    aggregation = settings.aggregation
    schema = aggregate_types.output_schema(
        events.EVENT_SCHEMA,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        keys=aggregation.keys,
        metrics=aggregation.metric_specs,
    )
    return PipelineSignature(
        sources=(
            SourceSignature(
                kind="kafka",
                connector=settings.kafka.connector,
                topics=tuple(sorted(settings.kafka.topics)),
            ),
        ),
        event_time_source=settings.events.time_source,
        event_time_field=settings.events.time_field,
        window=settings.window.spec,
        grouping_keys=tuple(aggregation.keys),
        aggregates=tuple(Aggregate(m.name, m.expression) for m in aggregation.metric_specs),
        output_schema=tuple(Column(name, type_) for name, type_ in schema),
        sink_format=settings.sink.format,
        sink_path=layout.output,
        output_mode=OUTPUT_MODE,
        spark_version=spark_version or pyspark.__version__,
    )
