"""The whole job on a broker: windows, quarantine, the ledger, restarts and the run lock."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._waiting as waiting
import support.background_run as background
import support.pipelines as pipelines
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.checkpoint.reader import (
    read_checkpoint,
)
from pyspark_kafka_upgrade._adapters.ledger.opening import (
    open_store,
)
from pyspark_kafka_upgrade._adapters.sink.opening import (
    open_sink,
)
from pyspark_kafka_upgrade._adapters.storage.run_lock import (
    RunLock,
    RunLockHeldError,
)
from pyspark_kafka_upgrade._application.checkpoint_show.report import (
    Verdict,
    inspect_checkpoint,
)
from pyspark_kafka_upgrade._application.run.bookkeeping import (
    UpgradeRequiredError,
)
from pyspark_kafka_upgrade._application.run.queries import (
    AGGREGATES_QUERY,
)
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    RunSummary,
    run_pipeline,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._domain.values.offsets import (
    format_offsets,
    offsets_from_json_object,
)
from support.example import main

BASE_MS = pipelines.BASE_MS
MINUTE_MS = pipelines.MINUTE_MS

pytestmark = pytest.mark.integration

WINDOW_MS = 10 * MINUTE_MS
DELAY_MS = 5 * MINUTE_MS
# Each malformed value and the reason it must be quarantined with.
MALFORMED = {
    b"\xff\xfe not json": "value is not valid UTF-8",
    b'{"article_id": "a1", "event_time": "2025-': "value is not valid JSON",
    b'{"article_id": 7, "event_time": "2025-11-22T10:00:00Z"}': (
        "field 'article_id' is not a string"
    ),
    b'{"article_id": "a9"}': "missing required field 'event_time'",
    # About 1 MB: under the broker's message size limit, over events.max_value_bytes.
    b"x" * 999_000: "value is 999000 bytes, over the 262144-byte limit",
}


def ledger_batches(settings: Settings, spark: SparkSession) -> list[BatchRecord]:
    with open_store(settings.ledger, spark=lambda: spark) as store:
        return store.batches(settings.pipeline.name, 1)


def iso_ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def end_offsets(progress: Mapping[str, Any]) -> str:
    # recentProgress gives the Python source's offsets as JSON text, the built-in's as objects.
    value = progress["sources"][0]["endOffset"]
    return format_offsets(
        offsets_from_json_object(json.loads(value) if isinstance(value, str) else value)
    )


def windows_written(spark: SparkSession, layout: GenerationLayout) -> Counter[tuple[int, str]]:
    rows = spark.read.parquet(layout.output).collect()
    counts: Counter[tuple[int, str]] = Counter()
    for row in rows:
        key = (round(row.window_start.timestamp() * 1000), row.article_id)
        assert key not in counts, f"window {key} written twice"
        counts[key] = row.views
    return counts


def oracle(events: list[tuple[int, str]], watermark_ms: int) -> Counter[tuple[int, str]]:
    """Tumbling 10-minute counts of the windows whose end the watermark has passed."""
    counts: Counter[tuple[int, str]] = Counter()
    for event_ms, article in events:
        start = event_ms - event_ms % WINDOW_MS
        if start + WINDOW_MS <= watermark_ms:
            counts[(start, article)] += 1
    return counts


@pytest.fixture
def topic(kafka_backend: testing.KafkaBackend) -> str:
    name = testing.unique_topic("pipeline")
    testing.create_topic(kafka_backend.bootstrap_servers, name, 2)
    return name


def run(settings: Settings, spark: SparkSession) -> RunSummary:
    return run_pipeline(
        RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark
    )


def test_the_ledger_holds_what_the_query_reported_and_malformed_records_are_quarantined(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, topic: str, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    times = [BASE_MS + i * MINUTE_MS for i in range(40)]
    records = pipelines.page_views(["a1", "a2"], times, partitions=2)
    testing.produce(bootstrap, topic, records)
    testing.produce(
        bootstrap, topic, [testing.Record(i % 2, None, v, BASE_MS) for i, v in enumerate(MALFORMED)]
    )
    settings = pipelines.pipeline_settings(
        tmp_path, bootstrap, topic, "kafka.max_offsets_per_trigger=10"
    )

    summary = run(settings, spark)

    progress = summary.progress[AGGREGATES_QUERY]
    ledger = ledger_batches(settings, spark)
    assert [b.batch_id for b in ledger] == [int(p["batchId"]) for p in progress]
    for batch, reported in zip(ledger, progress, strict=True):
        assert batch.end_offsets == end_offsets(reported)
        assert batch.batch_watermark_ms == iso_ms(reported["eventTime"]["watermark"])
        assert batch.input_rows == int(reported["numInputRows"])
        observed = reported["observedMetrics"]["batch_metrics"]
        assert batch.malformed_rows == observed["malformed_rows"]
    assert sum(b.input_rows for b in ledger) == len(records) + len(MALFORMED)
    assert sum(b.malformed_rows for b in ledger) == len(MALFORMED)
    assert min(b.min_event_time_ms for b in ledger if b.min_event_time_ms is not None) == times[0]
    assert max(b.max_event_time_ms for b in ledger if b.max_event_time_ms is not None) == times[-1]
    # The last batch ran with the watermark every event allows: nothing due is left unwritten.
    assert ledger[-1].batch_watermark_ms == times[-1] - DELAY_MS

    layout = GenerationLayout(settings.pipeline.root, 1)
    events = [(t, ["a1", "a2"][i % 2]) for i, t in enumerate(times)]
    assert windows_written(spark, layout) == oracle(events, ledger[-1].batch_watermark_ms)

    quarantined = spark.read.parquet(layout.quarantine).collect()
    assert {bytes(row.value): row.reason for row in quarantined} == MALFORMED
    assert len(quarantined) == len(MALFORMED)


def test_a_restart_continues_the_generation_and_writes_no_window_twice(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, topic: str, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    times = [BASE_MS + i * MINUTE_MS for i in range(40)]
    records = pipelines.page_views(["a1", "a2"], times, partitions=2)
    # The first run waits longer for late events; a shorter delay is safe on the checkpoint.
    patient = pipelines.pipeline_settings(
        tmp_path, bootstrap, topic, "window.watermark_delay=8 minutes"
    )
    settings = pipelines.pipeline_settings(tmp_path, bootstrap, topic)
    testing.produce(bootstrap, topic, records[:20])
    run(patient, spark)
    first = ledger_batches(settings, spark)
    testing.produce(bootstrap, topic, records[20:])

    run(settings, spark)

    ledger = ledger_batches(settings, spark)
    assert [b.batch_id for b in ledger] == list(range(len(ledger)))
    second_run = ledger[len(first)]
    assert second_run.start_offsets == first[-1].end_offsets
    assert second_run.run_id != first[-1].run_id
    assert sum(b.input_rows for b in ledger) == len(records)
    with open_store(settings.ledger, spark=lambda: spark) as store:
        generations = store.generations(settings.pipeline.name)
    assert [(g.generation, g.status.value) for g in generations] == [(1, "running")]
    # The upgrade planner bounds unrecorded batches by the longest delay any run used.
    window = generations[0].signature["window"]
    assert isinstance(window, dict)
    assert window["watermark_delay_ms"] == DELAY_MS
    assert generations[0].signature["history"] == {"max_watermark_delay_ms": 8 * MINUTE_MS}
    layout = GenerationLayout(settings.pipeline.root, 1)
    events = [(t, ["a1", "a2"][i % 2]) for i, t in enumerate(times)]
    assert windows_written(spark, layout) == oracle(events, ledger[-1].batch_watermark_ms)


def test_a_second_run_on_a_held_generation_is_refused_and_touches_nothing(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, topic: str, tmp_path: Path
) -> None:
    settings = pipelines.pipeline_settings(tmp_path, kafka_backend.bootstrap_servers, topic)
    layout = GenerationLayout(settings.pipeline.root, 1)
    with RunLock(layout.run_lock, purpose="run"), pytest.raises(RunLockHeldError) as refused:
        run(settings, spark)
    assert f"pid {os.getpid()}" in str(refused.value)
    assert not Path(layout.checkpoint).exists()
    assert not Path(layout.output).exists()


def test_a_stop_request_lets_the_batch_in_flight_commit(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, topic: str, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    times = [BASE_MS + i * MINUTE_MS for i in range(30)]
    testing.produce(bootstrap, topic, pipelines.page_views(["a1"], times, partitions=2))
    settings = pipelines.pipeline_settings(
        tmp_path, bootstrap, topic, "kafka.max_offsets_per_trigger=5"
    )
    with background.running(settings, spark) as job:
        waiting.wait_until(
            lambda: job.ended or len(ledger_batches(settings, spark)) >= 2,
            timeout=120,
            message="the running pipeline never recorded two batches",
        )
    assert job.summary().stopped_by == "stop request"

    state = read_checkpoint(GenerationLayout(settings.pipeline.root, 1).checkpoint)
    ledger = ledger_batches(settings, spark)
    assert ledger[-1].batch_id == state.last_committed_batch
    # Only a batch begun after the one in flight may be left planned; a restart replays it.
    assert state.last_committed_batch is not None
    assert set(state.planned_not_committed) <= {state.last_committed_batch + 1}
    assert not Path(GenerationLayout(settings.pipeline.root, 1).run_lock).exists()


def test_the_inspector_reads_the_run_checkpoint_and_agrees_with_the_ledger(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    topic: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    times = [BASE_MS + i * MINUTE_MS for i in range(25)]
    testing.produce(bootstrap, topic, pipelines.page_views(["a1", "a2"], times, partitions=2))
    settings = pipelines.pipeline_settings(
        tmp_path, bootstrap, topic, "kafka.max_offsets_per_trigger=10"
    )
    run(settings, spark)
    layout = GenerationLayout(settings.pipeline.root, 1)
    ledger = ledger_batches(settings, spark)

    with open_store(settings.ledger, spark=lambda: spark) as store:
        report = inspect_checkpoint(
            layout.checkpoint,
            sink=open_sink(settings.sink, layout.root),
            ledger=store,
            pipeline=settings.pipeline.name,
            generation=1,
        )

    assert report.ledger.verdict is Verdict.AGREES
    assert report.ledger.compared_batches == len(ledger)
    assert report.last_committed is not None
    assert report.last_committed.batch_id == ledger[-1].batch_id
    assert report.last_committed.batch_watermark_ms == ledger[-1].batch_watermark_ms
    assert [source.offsets for source in report.last_committed.sources] == [ledger[-1].end_offsets]
    assert report.planned_not_committed == ()
    assert report.sink is not None
    assert report.sink.last_batch_matches_checkpoint

    # The CLI gives the same facts, from the pipeline's own settings.
    overrides = [
        f"--set=pipeline.name={settings.pipeline.name}",
        f"--set=pipeline.root={settings.pipeline.root}",
        f"--set=ledger.store={settings.ledger.store}",
        f"--set=ledger.location={settings.ledger.location}",
    ]
    capsys.readouterr()  # the run's progress lines
    assert main([*overrides, "checkpoint", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["ledger"]["verdict"] == "agrees"
    assert shown["last_committed"]["batch_id"] == ledger[-1].batch_id
    assert shown["last_committed"]["batch_watermark_ms"] == ledger[-1].batch_watermark_ms


def test_a_change_the_checkpoint_cannot_carry_is_refused_with_advice(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, topic: str, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    times = [BASE_MS + i * MINUTE_MS for i in range(12)]
    testing.produce(bootstrap, topic, pipelines.page_views(["a1"], times, partitions=2))
    settings = pipelines.pipeline_settings(tmp_path, bootstrap, topic)
    run(settings, spark)
    before = ledger_batches(settings, spark)
    version_2 = pipelines.pipeline_settings(
        tmp_path,
        bootstrap,
        topic,
        'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}',
    )
    testing.produce(bootstrap, topic, pipelines.page_views(["a1"], [times[-1] + MINUTE_MS], 2))

    with pytest.raises(UpgradeRequiredError, match="aggregates") as refused:
        run(version_2, spark)

    assert "upgrade plan" in str(refused.value)
    assert ledger_batches(settings, spark) == before
    # A change the checkpoint carries (the watermark delay) runs on.
    longer_delay = pipelines.pipeline_settings(
        tmp_path, bootstrap, topic, "window.watermark_delay=6 minutes"
    )
    run(longer_delay, spark)
    assert len(ledger_batches(settings, spark)) > len(before)
