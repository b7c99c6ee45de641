"""This project's own events for its tests, and the upgrade the integration tests prove."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark_kafka_upgrade import Project
from pyspark_kafka_upgrade.testing import KafkaBackend, ProofReport, prove_upgrade

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z, a multiple of the windows used here
MINUTE_MS = 60_000
# Version 2 of the pipeline: a metric the checkpoint cannot carry.
USERS = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
# Sliding windows: a replay then holds events of windows the old generation wrote, which the
# replay filter must drop.
WINDOWS = [
    "window.duration=10 minutes",
    "window.slide=5 minutes",
    "window.watermark_delay=5 minutes",
]


def page_view(
    minute: int, article: str | None = None, user: str | None = None
) -> dict[str, object]:
    """One event ``minute`` minutes after BASE_MS; articles and users in turn by default."""
    moment = datetime.fromtimestamp((BASE_MS + minute * MINUTE_MS) / 1000, tz=UTC)
    return {
        "article_id": article or f"a{minute % 3}",
        "user_id": user or f"u{minute % 5}",
        "event_time": moment.isoformat().replace("+00:00", "Z"),
    }


def value(event: dict[str, object]) -> bytes:
    return json.dumps(event).encode()


def prove(
    project: Project,
    spark: SparkSession,
    kafka_backend: KafkaBackend,
    tmp_path: Path,
    run: Callable[[Sequence[str]], int] | None = None,
) -> ProofReport:
    """The upgrade proved on this project's events: one a minute from 10:00 to 10:59, of
    which version 1 reads those to 10:39 (W is then 10:34, and the windows ending after it
    are still open when it stops); version 2 adds the users metric."""
    return prove_upgrade(
        project,
        spark,
        kafka_backend,
        tmp_path,
        events=[page_view(minute) for minute in range(60)],
        stop_after=40,
        version_2=[USERS],
        settings=WINDOWS,
        run=run,
    )
