"""The upgrade proof's inputs that several suites share: an hour of page views, version 2's
added metric, sliding windows (whose replay holds events of windows already written), and
the query step the negative control leaves idle."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from pyspark_kafka_upgrade import Project
from pyspark_kafka_upgrade._core.settings import Settings
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
    version_2: Sequence[str] = (USERS,),
) -> ProofReport:
    """The plugin's upgrade proof on an hour of page views: version 1 reads 40 minutes,
    version 2 (by default) adds users; ``settings`` on top of the sliding windows, for both
    versions; ``run`` runs a version (``prove_upgrade``'s), by default in this process."""
    return prove_upgrade(
        project,
        spark,
        kafka,
        path,
        events=[page_view(minute) for minute in range(60)],
        stop_after=40,
        version_2=list(version_2),
        settings=[*WINDOWS, *settings],
        run=run,
    )


def prove_metrics_added(
    spark: SparkSession, kafka_backend: KafkaBackend, directory: Path, *settings: str
) -> ProofReport:
    """The upgrade `verify`'s and `upgrade backfill`'s tests start from: version 1 on 40 of 60
    minutes of page views in sliding windows, then version 2 (``METRICS_ADDED``) on the
    rest; exact, or the test stops here. ``settings``: more overrides for both versions."""
    report = prove(PROJECT, spark, kafka_backend, directory, *settings, version_2=[METRICS_ADDED])
    assert report.exact, report.explain()
    return report


def with_idle_replay_filter(project: Project, path: Path) -> Project:
    """``project`` with its replay filter's step called and its result dropped."""
    source = query_source(project)
    assert REPLAY_STEP in source, "the query's replay filter step moved"
    return with_query_source(project, source.replace(REPLAY_STEP, IDLE_STEP), path)


def settings_overrides(settings: Settings) -> list[str]:
    """``section.key=value`` overrides that reproduce the upgrade `verify` and `upgrade
    backfill` inspect (integration/conftest.py), version 2, for the CLI."""
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
        f"sink.format={settings.sink.format}",
        *WINDOWS,
        METRICS_ADDED,
    ]


def copy_of(settings: Settings, destination: Path) -> Settings:
    """The pipeline of ``settings`` with its ledger (a file beside the pipeline's root) as the
    stream left it, without any backfill, copied into ``destination``: a copy to change for
    good. Its sink logs name the copy's files (a file sink's log names them by absolute
    URI). The topic is shared; nothing here writes to it."""
    root = Path(str(settings.pipeline.root).removeprefix("file:"))
    ledger = Path(str(settings.ledger.location).removeprefix("file:"))
    assert ledger.is_relative_to(root.parent), "the ledger is not a file beside the pipeline"
    shutil.copytree(root.parent, destination, dirs_exist_ok=True)
    copy = destination / root.name
    for backfilled in (copy / "output").glob("backfill-*"):
        shutil.rmtree(backfilled)
    for log in copy.glob("**/_spark_metadata/*"):
        if log.name.endswith(".crc"):
            log.unlink()  # Hadoop's checksum of the text replaced below
        else:
            log.write_text(log.read_text().replace(root.as_uri(), copy.as_uri()))
    return dataclasses.replace(
        settings,
        pipeline=dataclasses.replace(settings.pipeline, root=str(copy)),
        ledger=dataclasses.replace(
            settings.ledger, location=str(destination / ledger.relative_to(root.parent))
        ),
    )
