"""What `run` settles in the ledger before its queries start: batches a killed run committed
but never recorded, and a ledger lost while later generations exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyspark_kafka_upgrade._adapters.ledger.sqlite_store import (
    SqliteOffsetStore,
)
from pyspark_kafka_upgrade._application.generation.signature import derive_signature
from pyspark_kafka_upgrade._application.run import run_command
from pyspark_kafka_upgrade._application.run.bookkeeping import (
    UpgradeIncompleteError,
    UpgradeRequiredError,
    mark_unrecorded_batches,
    record_generation,
    refuse_without_history,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._signatures import signature_of

PIPELINE = "page-views"


def committed(checkpoint: Path, batches: range) -> None:
    """A checkpoint whose batches all committed, as Spark writes it."""
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "metadata").write_text(json.dumps({"id": "q"}))
    for batch in batches:
        metadata = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}})
        offsets = json.dumps({"t": {"0": (batch + 1) * 10}})
        (checkpoint / "offsets" / str(batch)).write_text(f"v1\n{metadata}\n{offsets}")
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def batch(batch_id: int) -> BatchRecord:
    return BatchRecord(
        pipeline=PIPELINE,
        generation=1,
        batch_id=batch_id,
        query_id="q",
        run_id="r",
        batch_timestamp_ms=0,
        start_offsets=None,
        end_offsets='{"t":{"0":10}}',
        batch_watermark_ms=0,
        input_rows=10,
        min_event_time_ms=0,
        max_event_time_ms=0,
        malformed_rows=0,
        recorded_at_ms=0,
    )


def test_committed_batches_the_ledger_lacks_get_gap_markers_once(tmp_path: Path) -> None:
    layout = GenerationLayout(str(tmp_path / "pipeline"), 1)
    committed(Path(layout.checkpoint), range(5))
    with SqliteOffsetStore(tmp_path / "ledger.sqlite") as store:
        store.record_batch(batch(0))
        store.record_batch(batch(2))
        store.record_gap(LedgerGap(PIPELINE, 1, 3, "a write failed", 0))

        # 1 and 4: committed, neither recorded nor marked. 3 already has its marker.
        assert mark_unrecorded_batches(store, PIPELINE, layout) == [1, 4]
        assert mark_unrecorded_batches(store, PIPELINE, layout) == []
        marked = [gap.batch_id for gap in store.gaps(PIPELINE, 1) if gap.batch_id is not None]
    assert sorted(marked) == [1, 3, 4]


def test_a_generation_with_no_checkpoint_yet_has_nothing_to_mark(tmp_path: Path) -> None:
    layout = GenerationLayout(str(tmp_path / "pipeline"), 1)
    with SqliteOffsetStore(tmp_path / "ledger.sqlite") as store:
        assert mark_unrecorded_batches(store, PIPELINE, layout) == []


def test_a_lost_ledger_with_a_later_generation_on_disk_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "pipeline"
    settings = load_settings(
        PROJECT, env={}, overrides=[f"pipeline.root={root}", f"pipeline.name={PIPELINE}"]
    ).settings
    committed(Path(GenerationLayout(str(root), 1).checkpoint), range(2))
    with SqliteOffsetStore(tmp_path / "ledger.sqlite") as store:
        # Only generation 1 on disk: running it again is the way to rebuild its record.
        refuse_without_history(store, settings, 1)
        committed(Path(GenerationLayout(str(root), 2).checkpoint), range(1))
        with pytest.raises(UpgradeIncompleteError, match="committed checkpoints of generations 2"):
            refuse_without_history(store, settings, 1)


def test_a_run_says_what_changed_on_a_checkpoint_that_carries_it(tmp_path: Path) -> None:
    # A signature recorded by a library before format 2 lacks the events and the query:
    # `run` goes on, and its banner says so instead of staying silent.
    layout = GenerationLayout(str(tmp_path / "pipeline"), 1)
    current = signature_of(PROJECT)
    old = current.to_json()
    for key in ("format_version", "events", "query"):
        old.pop(key)
    with SqliteOffsetStore(str(tmp_path / "ledger.sqlite")) as store:
        record_running(store, old)
        carried = record_generation(store, "p", layout, store.generation("p", 1), current)
        again = record_generation(store, "p", layout, store.generation("p", 1), current)
    assert [sentence.split(":")[0] for sentence in carried] == ["events", "query"]
    assert all("predates it" in sentence for sentence in carried)
    assert again == []


def test_a_run_refusing_a_window_change_says_the_old_open_windows_are_left_unwritten(
    tmp_path: Path,
) -> None:
    layout = GenerationLayout(str(tmp_path / "pipeline"), 1)
    current = signature_of(PROJECT)
    old = current.to_json()
    window = old["window"]
    assert isinstance(window, dict)
    old["window"] = {**window, "duration_ms": 15 * 60_000, "slide_ms": 15 * 60_000}
    with SqliteOffsetStore(str(tmp_path / "ledger.sqlite")) as store:
        record_running(store, old)
        with pytest.raises(UpgradeRequiredError) as refused:
            record_generation(store, "p", layout, store.generation("p", 1), current)
    message = str(refused.value)
    assert "cannot carry this version" in message
    assert "are written by neither generation: a dashboard of the old windows shows a gap" in (
        message
    )


def record_running(store: SqliteOffsetStore, signature: dict[str, object]) -> None:
    """Generation 1 of pipeline "p", running, recorded with ``signature``."""
    store.record_generation(
        GenerationRecord(
            pipeline="p",
            generation=1,
            status=GenerationStatus.RUNNING,
            signature=signature,
            plan=None,
            created_at_ms=1,
            updated_at_ms=1,
        )
    )


class SparkStartedError(Exception):
    """The run got as far as starting Spark."""


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def started(*args: object, **kwargs: object) -> None:
        raise SparkStartedError

    monkeypatch.setattr(run_command, "build_spark_session", started)
    monkeypatch.setattr(run_command, "check_kafka_access", lambda kafka: None)


@pytest.mark.usefixtures("no_spark")
@pytest.mark.parametrize(
    ("metrics", "refused"),
    [('{"views": "count(*)"}', False), ('{"views": "count(*)", "users": "count(user_id)"}', True)],
)
def test_run_refuses_what_the_checkpoint_cannot_carry_before_it_starts_spark(
    tmp_path: Path, metrics: str, refused: bool
) -> None:
    # On a cluster a session is an application, ten seconds or more: the ledger says enough.
    def settings(metrics: str) -> Settings:
        overrides = [f"pipeline.root={tmp_path / 'pipeline'}", "pipeline.name=p"]
        overrides += ["ledger.store=sqlite", f"ledger.location={tmp_path / 'ledger.sqlite'}"]
        return load_settings(
            PROJECT, env={}, overrides=[*overrides, f"aggregation.metrics={metrics}"]
        ).settings

    recorded = settings('{"views": "count(*)"}')
    layout = GenerationLayout(str(tmp_path / "pipeline"), 1)
    with SqliteOffsetStore(tmp_path / "ledger.sqlite") as store:
        record_generation(store, "p", layout, None, derive_signature(recorded, layout))

    request = run_command.RunRequest(settings(metrics), available_now=True)
    with pytest.raises(UpgradeRequiredError if refused else SparkStartedError) as stopped:
        run_command.run_pipeline(request)
    if refused:
        assert "generation 1's checkpoint cannot carry this version" in str(stopped.value)
        assert "aggregates" in str(stopped.value)
