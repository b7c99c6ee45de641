"""`run` refuses a project's query that leaves out a step of the replay filter, before
anything runs: the next generation an upgrade starts would write windows twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._application.run.queries import (
    ReplayFilterMissingError,
    windowed_aggregates,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._frames import kafka_rows, project_recipe
from pyspark_kafka_upgrade.testing._signatures import query_source, with_query_source

STEPS = {
    "drop_written_windows": "    framed = steps.drop_written_windows(framed, recipe)\n",
    "drop_counted_events": "    events = steps.drop_counted_events(events, recipe)\n",
}


def test_the_reference_query_applies_both_steps(spark: SparkSession) -> None:
    frame = windowed_aggregates(
        PROJECT.query_module(), kafka_rows(spark, []), project_recipe(PROJECT)
    )
    assert "window_start" in frame.columns


@pytest.mark.parametrize("step", sorted(STEPS))
def test_a_query_without_a_step_is_refused_naming_it(
    spark: SparkSession, tmp_path: Path, step: str
) -> None:
    source = query_source(PROJECT)
    assert STEPS[step] in source
    edited = with_query_source(PROJECT, source.replace(STEPS[step], ""), tmp_path)
    with pytest.raises(ReplayFilterMissingError) as refused:
        windowed_aggregates(edited.query_module(), kafka_rows(spark, []), project_recipe(PROJECT))
    assert f"(steps.{step})" in str(refused.value)
    assert refused.value.exit_code == 2
