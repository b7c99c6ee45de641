"""The upgrade on real Kafka and this project's own events: version 1 stops with windows
open, version 2 adds a metric the checkpoint cannot carry, `run` refuses it, and after
`upgrade plan` and `upgrade apply` every window is written once, by one generation, with the
right values. `verify`, reading the events back from Kafka, says the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark_kafka_upgrade import Project, Status
from pyspark_kafka_upgrade.testing import KafkaBackend

from samples import prove

pytestmark = pytest.mark.integration


def test_an_upgrade_loses_no_event_and_writes_no_window_twice(
    project: Project, spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    report = prove(project, spark, kafka_backend, tmp_path)
    assert report.exact, report.explain()
    assert report.plan.records_to_replay, "nothing was replayed: the proof proved little"
    generations = {generation for writers in report.written.values() for generation, _ in writers}
    # Windows starting 09:55 to 10:40 (the last W is 10:54), for three articles.
    assert generations == {1, 2} and len(report.expected) == 30
    # The check a team runs after its own upgrade, on the same output: every window exact.
    verified = report.verified
    assert verified is not None and verified.ok
    assert verified.count(Status.EXACT) == 30 and verified.events_read == 60
