"""The upgrade proof's inputs that several suites share: an hour of page views, version 2's
added metric, sliding windows (whose replay holds events of windows already written), and
the query step the negative control leaves idle."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from pyspark_kafka_upgrade import Project
from pyspark_kafka_upgrade._core.settings import Settings, load_settings
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing import (
    KafkaBackend,
    ProofReport,
    prove_upgrade,
    query_source,
    with_query_source,
)

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z
USERS = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
# Version 2 of the upgrade `verify` and `upgrade backfill` inspect (integration/conftest.py).
METRICS_ADDED = (
    'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)", '
    '"first_user": "min(user_id)", "last_user": "max(user_id)"}'
)
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


def prove(
    project: Project,
    spark: SparkSession,
    kafka: KafkaBackend,
    path: Path,
    *settings: str,
    run: Callable[[Sequence[str]], int] | None = None,
) -> ProofReport:
    """The plugin's upgrade proof on an hour of page views: version 1 reads 40 minutes,
    version 2 adds users; ``settings`` on top of the sliding windows, for both versions;
    ``run`` runs a version (``prove_upgrade``'s), by default in this process."""
    return prove_upgrade(
        project,
        spark,
        kafka,
        path,
        events=[page_view(minute) for minute in range(60)],
        stop_after=40,
        version_2=[USERS],
        settings=[*WINDOWS, *settings],
        run=run,
    )


def with_idle_replay_filter(project: Project, path: Path) -> Project:
    """``project`` with its replay filter's step called and its result dropped."""
    source = query_source(project)
    assert REPLAY_STEP in source, "the query's replay filter step moved"
    return with_query_source(project, source.replace(REPLAY_STEP, IDLE_STEP), path)


def settings_overrides(settings: Settings) -> list[str]:
    """The ``section.key=value`` overrides that reproduce the proof's version 2."""
    return [
        f"pipeline.name={settings.pipeline.name}",
        f"pipeline.root={settings.pipeline.root}",
        f"kafka.bootstrap_servers={settings.kafka.bootstrap_servers}",
        f"kafka.topics={settings.kafka.topics[0]}",
        f"kafka.connector={settings.kafka.connector}",
        "kafka.starting_offsets=earliest",
        "sink.trigger_interval=1 second",
        f"ledger.store={settings.ledger.store}",
        f"ledger.location={settings.ledger.location}",
        *WINDOWS,
        METRICS_ADDED,
    ]


def copy_of(settings: Settings, directory: Path) -> Settings:
    """The pipeline of ``settings`` copied into ``directory`` (its root and its SQLite
    ledger, through SQLite's backup so that a write-ahead log comes along): a copy to change
    for good, whose file sink logs name its own files. The topic is shared; nothing here
    writes to it."""
    if settings.ledger.store != "sqlite":
        raise RuntimeError(f"copy_of copies a SQLite ledger, not {settings.ledger.store!r}")
    root = directory / "pipeline"
    original = Path(str(settings.pipeline.root).removeprefix("file:"))
    shutil.copytree(original, root)
    # A file sink's log names its files by absolute URI: the copy's must name the copy's.
    for log in root.glob("*/*/_spark_metadata/*"):
        if log.name.endswith(".crc"):
            log.unlink()  # its checksum would no longer match
        else:
            log.write_text(log.read_text().replace(original.as_uri(), root.as_uri()))
    ledger = directory / "ledger.sqlite"
    with sqlite3.connect(settings.ledger.location) as source, sqlite3.connect(ledger) as target:
        source.backup(target)
    overrides = [
        *settings_overrides(settings),
        f"pipeline.root={root}",
        f"ledger.location={ledger}",
    ]
    return load_settings(PROJECT, env={}, overrides=overrides).settings
