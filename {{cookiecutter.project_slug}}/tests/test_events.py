"""This project's events through its query's parsing: what counts, what is quarantined, and
the parser's mirror (which `upgrade plan` reads event times with) agreeing with Spark."""

from __future__ import annotations

import json

from pyspark.sql import SparkSession
from pyspark_kafka_upgrade.testing import kafka_rows, mirror_disagreements, project_recipe

from {{ cookiecutter.package_name }} import query
from {{ cookiecutter.package_name }}.pipeline import PROJECT

from samples import page_view


def event(**changes: object) -> bytes:
    """A page view with some fields changed (None: JSON null)."""
    return json.dumps({**page_view(15, "a1"), **changes}).encode()


def test_a_valid_event_counts_and_a_malformed_one_is_quarantined_with_its_reason(
    spark: SparkSession,
) -> None:
    raw = kafka_rows(spark, [event(), event(article_id=None), b"not json", event(user_id=None)])
    # Tumbling windows, whatever the settings say: the two valid events share one window.
    recipe = project_recipe(PROJECT, "window.duration=10 minutes", "window.slide=")

    quarantined = query.malformed_records(raw, recipe).orderBy("offset").collect()
    counted = query.windowed_aggregates(raw, recipe).collect()

    assert [(row.offset, row.reason) for row in quarantined] == [
        (1, "required field 'article_id' is null"),
        (2, "value is not valid JSON"),
    ]
    assert bytes(quarantined[1].value) == b"not json"
    # user_id is optional: its event counts.
    assert [(row.article_id, row.views) for row in counted] == [("a1", 2)]


def test_the_parsers_mirror_agrees_with_spark_on_these_events(spark: SparkSession) -> None:
    samples = [
        event(),
        event(user_id=None),
        event(event_time="2026-11-22T10:15:00+01:00"),
        event(event_time="2026-11-22 10:15"),
        event(article_id=7),
        json.dumps({"article_id": "a1"}).encode(),
        event() + b" trailing",
        b"[1, 2]",
        b"",
        None,
    ]
    assert mirror_disagreements(spark, PROJECT, samples) == []
