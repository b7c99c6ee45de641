"""This project's windowed query on static frames: each event in its windows, once, the
metrics from the settings, and the replay filter dropping the windows an earlier generation
wrote."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark_kafka_upgrade import ReplayFilter
from pyspark_kafka_upgrade.testing import kafka_rows, project_recipe

from {{ cookiecutter.package_name }} import query
from {{ cookiecutter.package_name }}.pipeline import PROJECT

from samples import BASE_MS, MINUTE_MS, USERS, page_view, value

TUMBLING = ("window.duration=10 minutes", "window.slide=")
Row = tuple[object, ...]


def windows(
    spark: SparkSession, events: list[bytes], *overrides: str, **options: object
) -> set[Row]:
    """(window start in minutes after BASE_MS, article, metrics...) of every row."""
    recipe = project_recipe(PROJECT, *overrides, **options)  # type: ignore[arg-type]
    built = query.windowed_aggregates(kafka_rows(spark, events), recipe)
    return {
        ((round(row.window_start.timestamp() * 1000) - BASE_MS) // MINUTE_MS, *row[2:])
        for row in built.collect()
    }


def test_each_event_counts_once_in_its_tumbling_window(spark: SparkSession) -> None:
    events = [page_view(1, "a1"), page_view(9, "a1"), page_view(9, "a2"), page_view(10, "a1")]
    found = windows(spark, [value(e) for e in events], *TUMBLING)
    assert found == {(0, "a1", 2), (0, "a2", 1), (10, "a1", 1)}


def test_a_metric_from_the_settings_is_computed(spark: SparkSession) -> None:
    events = [page_view(1, "a1", "u1"), page_view(2, "a1", "u2"), page_view(3, "a1", "u1")]
    assert windows(spark, [value(e) for e in events], *TUMBLING, USERS) == {(0, "a1", 3, 2)}


def test_the_replay_filter_drops_the_windows_an_earlier_generation_wrote(
    spark: SparkSession,
) -> None:
    events = [page_view(5, "a1"), page_view(15, "a1"), page_view(25, "a1")]
    written_through = ReplayFilter(window_end_after_ms=BASE_MS + 20 * MINUTE_MS)
    found = windows(spark, [value(e) for e in events], *TUMBLING, replay=written_through)
    assert found == {(20, "a1", 1)}
