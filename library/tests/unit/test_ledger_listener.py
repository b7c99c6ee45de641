"""The ledger listener turns progress events into records, and never fails silently."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import pytest

from pyspark_kafka_upgrade._adapters.spark.listener import (
    BatchMetricNames,
    LedgerListener,
    ProgressError,
    batch_record_from_progress,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
    LedgerGap,
)

METRICS = BatchMetricNames("m", "rows", "bad", "min_us", "max_us")


def progress(batch_id: int = 3, **changes: Any) -> dict[str, Any]:
    """A progress event as Spark writes it (``StreamingQueryProgress.json``)."""
    event: dict[str, Any] = {
        "id": "q-1",
        "runId": "r-1",
        "name": "aggregates",
        "timestamp": "2026-11-22T10:00:01.500Z",
        "batchId": batch_id,
        "numInputRows": 7,
        "eventTime": {"watermark": "2026-11-22T09:50:00.000Z", "max": "2026-11-22T09:55:00.000Z"},
        "sources": [
            {
                "description": "pykafka",
                # The Python source's json.dumps spacing; the built-in writes it compact.
                "startOffset": {"b": {"1": 4, "0": 2}},
                "endOffset": {"b": {"1": 9, "0": 5}},
                "numInputRows": 7,
            }
        ],
        "observedMetrics": {"m": {"rows": 7, "bad": 2, "min_us": 1_000_001, "max_us": 2_000_001}},
    }
    event.update(changes)
    return event


def record(event: dict[str, Any]) -> BatchRecord:
    return batch_record_from_progress(
        event, pipeline="p", generation=2, metrics=METRICS, recorded_at_ms=99
    )


def test_a_progress_event_becomes_a_canonical_batch_record() -> None:
    assert record(progress()) == BatchRecord(
        pipeline="p",
        generation=2,
        batch_id=3,
        query_id="q-1",
        run_id="r-1",
        batch_timestamp_ms=1_795_341_601_500,
        start_offsets='{"b":{"0":2,"1":4}}',
        end_offsets='{"b":{"0":5,"1":9}}',
        batch_watermark_ms=1_795_341_000_000,
        input_rows=7,
        # Floor and ceiling of the observed microseconds: the bounds still hold every event.
        min_event_time_ms=1_000,
        max_event_time_ms=2_001,
        malformed_rows=2,
        recorded_at_ms=99,
    )


def test_the_first_batch_has_no_start_offsets_and_a_zero_watermark() -> None:
    source = {"startOffset": None, "endOffset": '{"b":{"0":5}}', "numInputRows": 5}
    event = progress(0, sources=[source], eventTime={"watermark": "1970-01-01T00:00:00.000Z"})
    assert record(event).start_offsets is None
    assert record(event).batch_watermark_ms == 0


def test_offsets_of_several_sources_merge_and_string_offsets_parse() -> None:
    sources = [
        {"startOffset": '{"a": {"0": 1}}', "endOffset": '{"a": {"0": 2}}'},
        {"startOffset": '{"b":{"0":3}}', "endOffset": '{"b":{"0":4}}'},
    ]
    assert record(progress(sources=sources)).end_offsets == '{"a":{"0":2},"b":{"0":4}}'


def test_a_batch_without_rows_has_no_event_time_bounds() -> None:
    event = progress(numInputRows=0, observedMetrics={"m": {"rows": 0, "bad": 0}})
    assert (record(event).min_event_time_ms, record(event).max_event_time_ms) == (None, None)


def test_an_event_without_a_batch_id_is_a_progress_error() -> None:
    event = progress()
    del event["batchId"]
    with pytest.raises(ProgressError, match="batchId"):
        record(event)


@dataclass
class FakeProgress:
    json: str


@dataclass
class FakeEvent:
    progress: FakeProgress


def event_of(data: dict[str, Any]) -> FakeEvent:
    return FakeEvent(FakeProgress(json.dumps(data)))


class FlakyStore:
    """Fails the first ``failures`` batch writes; fails gap writes when told to."""

    def __init__(self, failures: int, *, gaps_fail: bool = False) -> None:
        self.failures = failures
        self.gaps_fail = gaps_fail
        self.batches: list[BatchRecord] = []
        self.gaps: list[LedgerGap] = []

    def record_batch(self, batch: BatchRecord) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise OSError("database is locked")
        self.batches.append(batch)

    def record_gap(self, gap: LedgerGap) -> None:
        if self.gaps_fail:
            raise OSError("disk full")
        self.gaps.append(gap)


def listener(store: FlakyStore) -> LedgerListener:
    return LedgerListener(
        store,  # type: ignore[arg-type]
        pipeline="p",
        generation=2,
        query_name="aggregates",
        metrics=METRICS,
        clock_ms=lambda: 5,
    )


def test_a_brief_store_failure_is_retried_and_leaves_no_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    store = FlakyStore(failures=2)
    watcher = listener(store)
    watcher.onQueryProgress(event_of(progress()))
    assert [b.batch_id for b in store.batches] == [3]
    assert store.gaps == []
    assert watcher.failed_writes == 0


def test_a_lasting_store_failure_is_logged_and_marked_as_a_gap(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    store = FlakyStore(failures=99)
    watcher = listener(store)
    with caplog.at_level(logging.ERROR):
        watcher.onQueryProgress(event_of(progress()))
    assert store.batches == []
    assert [(g.batch_id, g.generation, g.recorded_at_ms) for g in store.gaps] == [(3, 2, 5)]
    assert "database is locked" in store.gaps[0].reason
    assert watcher.failed_writes == 1
    assert "batch 3 was not recorded" in caplog.text
    # The run's shutdown waits for this batch: a failed write still counts as handled.
    assert watcher.wait_for_batch(3, timeout_s=0)


def test_when_even_the_gap_cannot_be_written_the_listener_says_so_and_survives(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    store = FlakyStore(failures=99, gaps_fail=True)
    watcher = listener(store)
    with caplog.at_level(logging.ERROR):
        watcher.onQueryProgress(event_of(progress()))
    assert watcher.failed_writes == 1
    assert "could not be written either" in caplog.text
    assert "hole" in caplog.text


def test_other_queries_progress_is_ignored() -> None:
    store = FlakyStore(failures=0)
    watcher = listener(store)
    watcher.onQueryProgress(event_of(progress(name="quarantine")))
    assert store.batches == []
    assert not watcher.wait_for_batch(0, timeout_s=0)


def test_a_repeated_event_is_written_again_as_an_upsert() -> None:
    store = FlakyStore(failures=0)
    watcher = listener(store)
    watcher.onQueryProgress(event_of(progress()))
    watcher.onQueryProgress(event_of(progress()))
    assert [b.batch_id for b in store.batches] == [3, 3]
    assert store.batches[0] == store.batches[1]


def test_a_batch_with_rows_but_no_metrics_is_a_progress_error_not_an_empty_batch() -> None:
    # Recorded as "no events", it would let the planner skip the batch and lose its events.
    with pytest.raises(ProgressError, match="no observed metrics"):
        record(progress(observedMetrics={}))
