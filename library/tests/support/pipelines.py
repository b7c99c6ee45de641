"""Settings and events for tests that run the whole pipeline against a broker."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing import _ledgers as ledgers

# SINK_FORMAT=delta runs the pipeline proofs on a Delta table; the default is the file sink.
SINK_FORMAT = os.environ.get("SINK_FORMAT", "").strip()
BASE_MS = 1_763_805_600_000  # 2025-11-22T10:00:00Z: old enough to be "late" if mishandled
MINUTE_MS = 60_000


def pipeline_settings(
    tmp_path: Path,
    bootstrap: str,
    topic: str,
    *overrides: str,
) -> Settings:
    """Settings for one test: its own pipeline name, root and ledger, then ``overrides``."""
    return load_settings(
        PROJECT, env={}, overrides=pipeline_overrides(tmp_path, bootstrap, topic, *overrides)
    ).settings


def pipeline_overrides(tmp_path: Path, bootstrap: str, topic: str, *overrides: str) -> list[str]:
    """The ``section.key=value`` settings of :func:`pipeline_settings`, e.g. for ``--set``."""
    base = [
        f"pipeline.name={topic}",
        f"pipeline.root={tmp_path / 'pipeline'}",
        f"kafka.bootstrap_servers={bootstrap}",
        f"kafka.topics={topic}",
        "kafka.starting_offsets=earliest",
        "window.duration=10 minutes",
        "window.slide=",
        "window.watermark_delay=5 minutes",
        "sink.trigger_interval=1 second",
        f"kafka.connector={testing.connector_under_test(PROJECT)}",
        *([f"sink.format={SINK_FORMAT}"] if SINK_FORMAT else []),
        *ledger_overrides(tmp_path),
    ]
    return [*base, *overrides]


def ledger_overrides(tmp_path: Path) -> list[str]:
    """A ledger of the reference project's store kind for one test."""
    return ledgers.ledger_overrides(PROJECT, tmp_path)


def event_value(article: str, event_ms: int, user: str = "u1") -> bytes:
    return json.dumps(
        {"article_id": article, "user_id": user, "event_time": iso(event_ms)}
    ).encode()


def iso(epoch_ms: int) -> str:
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def page_views(
    articles: Sequence[str], event_times_ms: Iterable[int], partitions: int
) -> list[testing.Record]:
    """One valid event per time, articles in turn, spread over partitions in turn."""
    return [
        testing.Record(
            i % partitions,
            articles[i % len(articles)].encode(),
            event_value(articles[i % len(articles)], event_ms),
            event_ms,
        )
        for i, event_ms in enumerate(event_times_ms)
    ]
