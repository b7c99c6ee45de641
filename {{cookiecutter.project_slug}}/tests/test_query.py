"""This project's windowed query on static frames: each event in its windows, once, and the
replay filter dropping the windows an earlier generation wrote."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pyspark.sql import SparkSession
from pyspark_kafka_upgrade.model.replay_filter import ReplayFilter
from pyspark_kafka_upgrade.testing.frames import kafka_rows, project_recipe

from {{ cookiecutter.package_name }} import query
from {{ cookiecutter.package_name }}.pipeline import PROJECT

# 2026-11-22T10:00:00Z, a multiple of the window lengths used here.
BASE_MS = 1_795_341_600_000
MINUTE_MS = 60_000


def views(article: str, minute: int, user: str = "u1") -> bytes:
    moment = datetime.fromtimestamp((BASE_MS + minute * MINUTE_MS) / 1000, tz=UTC)
    return json.dumps(
        {"article_id": article, "user_id": user, "event_time": moment.isoformat()}
    ).encode()


def rows(spark: SparkSession, values: list[bytes], *overrides: str, **recipe: object) -> set:  # type: ignore[type-arg]
    raw = kafka_rows(spark, values)
    built = query.windowed_aggregates(raw, project_recipe(PROJECT, *overrides, **recipe))  # type: ignore[arg-type]
    return {
        (round(row.window_start.timestamp() * 1000 - BASE_MS) // MINUTE_MS, *row[2:])
        for row in built.collect()
    }


def test_each_event_counts_once_in_its_tumbling_window(spark: SparkSession) -> None:
    values = [views("a1", 1), views("a1", 9), views("a2", 9), views("a1", 10)]
    found = rows(spark, values, "window.duration=10 minutes", "window.slide=")
    assert found == {(0, "a1", 2), (0, "a2", 1), (10, "a1", 1)}


def test_a_metric_from_the_settings_is_computed(spark: SparkSession) -> None:
    values = [views("a1", 1, "u1"), views("a1", 2, "u2"), views("a1", 3, "u1")]
    metrics = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
    assert rows(spark, values, "window.duration=10 minutes", metrics) == {(0, "a1", 3, 2)}


def test_the_replay_filter_drops_the_windows_an_earlier_generation_wrote(
    spark: SparkSession,
) -> None:
    values = [views("a1", 5), views("a1", 15), views("a1", 25)]
    written_through = ReplayFilter(window_end_after_ms=BASE_MS + 20 * MINUTE_MS)
    found = rows(spark, values, "window.duration=10 minutes", replay=written_through)
    assert found == {(20, "a1", 1)}
