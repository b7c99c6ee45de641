"""A run reads its settings in few places: followed as data, they pass through any one
module of the package at most three times (the application's seams, issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import support.pipelines as pipelines
import support.settings_walk as walk
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)

pytestmark = pytest.mark.integration

MAX_VISITS = 3


def test_a_run_visits_each_module_with_the_settings_at_most_three_times(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("walk")
    testing.create_topic(bootstrap, topic, 2)
    times = [pipelines.BASE_MS + i * pipelines.MINUTE_MS for i in range(30)]
    testing.produce(bootstrap, topic, pipelines.page_views(["a1", "a2"], times, partitions=2))
    settings = pipelines.pipeline_settings(tmp_path, bootstrap, topic)

    with walk.traced() as calls:
        summary = run_pipeline(
            RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark
        )

    assert summary.batches, "the run committed nothing, so the walk proves little"
    module, count = walk.most_visited(calls)
    print(f"settings walk ({len(walk.visits(calls))} visits): {walk.describe(calls)}")
    assert "_application.run.run_command" in calls, "the tracer missed the run itself"
    assert count <= MAX_VISITS, f"{module} is visited {count} times: {walk.describe(calls)}"
