"""The pipeline's signature: what a checkpoint's compatibility depends on.

It is recorded in the ledger when a generation starts. The upgrade advisor compares the
signature a checkpoint was written with against the one the current code and settings
build, following Spark's rules on what may change across a restart on the same checkpoint:
the number and kind of sources, the subscribed topics, the sink's path, and stateful
operators with their state schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from .. import transformations
from ..layout import GenerationLayout
from ..settings import Settings
from ..source.schema import spark_schema

OUTPUT_MODE = "append"


def pipeline_signature(
    settings: Settings,
    layout: GenerationLayout,
    *,
    aggregate_schema: Sequence[tuple[str, str]],
    spark_version: str,
) -> dict[str, object]:
    """The signature of the job these settings build, as plain JSON-ready data.

    ``aggregate_schema`` is the output's (column, Spark type) list, taken from the DataFrame
    Spark planned, so a changed type is seen even when the settings look the same.
    """
    window = settings.window.spec
    return {
        "sources": [
            {
                "kind": "kafka",
                "connector": settings.kafka.connector,
                "topics": sorted(settings.kafka.topics),
            }
        ],
        "event_time": {
            "source": settings.events.time_source,
            "field": settings.events.time_field,
        },
        "window": {
            "duration_ms": window.duration_ms,
            "slide_ms": window.slide_ms,
            "watermark_delay_ms": window.watermark_delay_ms,
        },
        "grouping_keys": list(settings.aggregation.keys),
        "aggregates": [
            {"name": spec.name, "expression": spec.expression}
            for spec in settings.aggregation.metric_specs
        ],
        "output_schema": [{"name": name, "type": type_} for name, type_ in aggregate_schema],
        "sink": {"format": settings.sink.format, "path": layout.output},
        "output_mode": OUTPUT_MODE,
        "spark_version": spark_version,
    }


def build_signature(
    spark: SparkSession, settings: Settings, layout: GenerationLayout
) -> dict[str, object]:
    """The signature of the job these settings build, planned by Spark without reading Kafka.

    The output schema comes from running the job's own transformations over an empty
    DataFrame of Kafka rows, so ``run`` and ``upgrade plan`` derive it the same way.
    """
    raw = spark.createDataFrame([], spark_schema(include_headers=False))
    events = transformations.valid_events(
        transformations.parse_events(
            raw,
            time_source=settings.events.time_source,
            time_field=settings.events.time_field,
            max_value_bytes=settings.events.max_value_bytes,
        )
    )
    schema = transformations.aggregate_schema(
        events, settings.aggregation.keys, settings.aggregation.metric_specs
    )
    return pipeline_signature(
        settings, layout, aggregate_schema=schema, spark_version=spark.version
    )
