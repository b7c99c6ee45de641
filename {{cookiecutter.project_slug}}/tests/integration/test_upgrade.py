"""The upgrade on real Kafka and this project's own events: version 1 stops with windows
open, version 2 adds a metric the checkpoint cannot carry, and after `upgrade plan` and
`upgrade apply` every window is written once, by one generation, with the right values."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark_kafka_upgrade.testing.kafka_backends import KafkaBackend
from pyspark_kafka_upgrade.testing.proof import prove_upgrade
from pyspark_kafka_upgrade.values.project import Project

pytestmark = pytest.mark.integration

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z
USERS = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
WINDOWS = [
    "window.duration=10 minutes",
    "window.slide=5 minutes",
    "window.watermark_delay=5 minutes",
]


def page_view(minute: int) -> dict[str, object]:
    moment = datetime.fromtimestamp(BASE_MS / 1000 + minute * 60, tz=UTC)
    return {
        "article_id": f"a{minute % 3}",
        "user_id": f"u{minute % 5}",
        "event_time": moment.isoformat().replace("+00:00", "Z"),
    }


def test_an_upgrade_loses_no_event_and_writes_no_window_twice(
    project: Project, spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    # 10:00 to 10:59, one event a minute: version 1 reads to 10:39, so W is 10:34 and the
    # 10:30-10:40 windows are still open when it stops.
    report = prove_upgrade(
        project,
        spark,
        kafka_backend,
        tmp_path,
        events=[page_view(minute) for minute in range(60)],
        stop_after=40,
        version_2=[USERS],
        # Sliding windows: the replay then holds events of windows version 1 wrote, which
        # the replay filter must drop.
        settings=WINDOWS,
    )
    assert report.exact, report.explain()
    assert report.plan.records_to_replay, "nothing was replayed: the proof proved little"
    generations = {generation for writers in report.written.values() for generation, _ in writers}
    assert generations == {1, 2} and len(report.expected) == 30
