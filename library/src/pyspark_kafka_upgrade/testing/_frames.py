"""Static frames for a project's unit tests: Kafka rows, and the recipe its settings give.

A project's query runs on them as it runs in a micro-batch, with no Kafka and no stream::

    raw = kafka_rows(spark, [b'{"article_id": "a1", ...}'])
    rows = query.windowed_aggregates(raw, project_recipe(PROJECT))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from pyspark.sql import DataFrame, SparkSession

from pyspark_kafka_upgrade._adapters.kafka.schema import spark_schema
from pyspark_kafka_upgrade._application.run.bookkeeping import GenerationStart
from pyspark_kafka_upgrade._application.run.queries import recipe_of
from pyspark_kafka_upgrade._core.query.recipe import Recipe
from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.values.project import Project

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def kafka_rows(
    spark: SparkSession,
    values: Sequence[bytes | None],
    *,
    topic: str = "events",
    partition: int = 0,
    timestamps_ms: Sequence[int] | None = None,
) -> DataFrame:
    """Kafka rows as the source gives them, offsets 0..n-1; each key is its offset's text."""
    stamps = timestamps_ms if timestamps_ms is not None else [0] * len(values)
    rows = [
        (
            str(offset).encode(),
            value,
            topic,
            partition,
            offset,
            _EPOCH + timedelta(milliseconds=stamp),
            0,
        )
        for offset, (value, stamp) in enumerate(zip(values, stamps, strict=True))
    ]
    return spark.createDataFrame(rows, spark_schema(include_headers=False))


def project_recipe(project: Project, *overrides: str, replay: ReplayFilter | None = None) -> Recipe:
    """The recipe ``run`` gives the project's query, from its defaults and ``overrides``
    (``section.key=value``); ``replay`` as a generation started from a plan has it."""
    settings = load_settings(project, env={}, overrides=overrides).settings
    recipe = recipe_of(settings, GenerationStart())
    return recipe if replay is None else replace(recipe, replay=replay)
