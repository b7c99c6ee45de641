"""What `upgrade plan` and `run` see of this project's files: an edit the checkpoint cannot
carry (a query step, a metric, the window) needs a new generation, and `run` refuses it."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark_kafka_upgrade import Verdict
from pyspark_kafka_upgrade.testing import (
    advice,
    kafka_rows,
    output_schema,
    project_recipe,
    query_source,
    run_refusal,
    with_query_source,
)

from {{ cookiecutter.package_name }} import query
from {{ cookiecutter.package_name }}.pipeline import PROJECT

USERS = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
REPLAY_STEP = "    framed = steps.drop_written_windows(framed, recipe)\n"


def test_the_output_schema_the_plan_derives_is_the_one_spark_builds(spark: SparkSession) -> None:
    recipe = project_recipe(PROJECT, USERS)
    built = query.windowed_aggregates(kafka_rows(spark, []), recipe).schema
    derived = output_schema(
        PROJECT.events,
        time_source=recipe.time_source,
        time_field=recipe.time_field,
        keys=recipe.keys,
        metrics=recipe.metrics,
    )
    assert [(f.name, f.dataType.simpleString()) for f in built.fields] == derived


def test_an_edited_query_step_needs_a_new_generation_and_run_refuses_it(tmp_path: Path) -> None:
    source = query_source(PROJECT)
    assert REPLAY_STEP in source
    edited = with_query_source(PROJECT, source.replace(REPLAY_STEP, ""), tmp_path)

    seen = advice(PROJECT, edited)
    assert seen.verdict is Verdict.NEEDS_NEW_CHECKPOINT
    assert [change.path for change in seen.changes] == ["query"]
    refused = run_refusal(PROJECT, edited, tmp_path)
    assert refused is not None and "Run `upgrade plan`" in refused


def test_comments_and_formatting_in_the_query_are_not_changes(tmp_path: Path) -> None:
    source = query_source(PROJECT)
    commented = source.replace("\n\n\ndef ", "\n\n\n# a comment\ndef ")
    assert commented != source
    reworded = with_query_source(PROJECT, commented, tmp_path)
    assert advice(PROJECT, reworded).verdict is Verdict.SAME


def test_a_new_metric_or_window_needs_a_new_generation_a_longer_delay_does_not() -> None:
    assert advice(PROJECT, PROJECT, new_settings=(USERS,)).verdict is Verdict.NEEDS_NEW_CHECKPOINT
    window = ("window.duration=30 minutes",)
    assert advice(PROJECT, PROJECT, new_settings=window).verdict is Verdict.NEEDS_NEW_CHECKPOINT
    delay = ("window.watermark_delay=2 hours",)
    assert advice(PROJECT, PROJECT, new_settings=delay).verdict is Verdict.SAFE
