"""The plugin's upgrade proof, which a project runs on its own events, can fail: it passes
on the reference pipeline and catches a query whose replay filter does nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing import (
    KafkaBackend,
    ProofReport,
    prove_upgrade,
    query_source,
    with_query_source,
)

pytestmark = pytest.mark.integration

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z
USERS = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
# Sliding windows: the replay, which starts at the earliest event of a window still open,
# then holds events of windows the old generation wrote too.
WINDOWS = [
    "window.duration=10 minutes",
    "window.slide=5 minutes",
    "window.watermark_delay=5 minutes",
]
REPLAY_STEP = "    framed = steps.drop_written_windows(framed, recipe)\n"
# The step called, its result dropped: `run` cannot tell, the oracle must.
IDLE_STEP = "    steps.drop_written_windows(framed, recipe)\n"


def page_view(minute: int) -> dict[str, object]:
    moment = datetime.fromtimestamp(BASE_MS / 1000 + minute * 60, tz=UTC)
    return {
        "article_id": f"a{minute % 3}",
        "user_id": f"u{minute % 5}",
        "event_time": moment.isoformat().replace("+00:00", "Z"),
    }


def prove(project: Project, spark: SparkSession, kafka: KafkaBackend, path: Path) -> ProofReport:
    return prove_upgrade(
        project,
        spark,
        kafka,
        path,
        events=[page_view(minute) for minute in range(60)],
        stop_after=40,
        version_2=[USERS],
        settings=WINDOWS,
    )


def test_the_proof_holds_on_the_reference_pipeline(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    report = prove(PROJECT, spark, kafka_backend, tmp_path)
    assert report.exact, report.explain()
    # Windows starting 09:55 to 10:40 (the last W is 10:54), for three articles.
    assert len(report.expected) == 30
    assert {g for writers in report.written.values() for g, _ in writers} == {1, 2}
    assert json.dumps(report.explain()).count("0 lost, 0 written twice") == 1


def test_the_proof_catches_a_query_whose_replay_filter_does_nothing(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    source = query_source(PROJECT)
    assert REPLAY_STEP in source
    broken = with_query_source(PROJECT, source.replace(REPLAY_STEP, IDLE_STEP), tmp_path)
    report = prove(broken, spark, kafka_backend, tmp_path)
    assert not report.exact
    # The replay rebuilds the windows the old generation wrote from the replayed events:
    # written twice, the second time with only part of their events.
    assert report.written_twice and report.different, report.explain()
