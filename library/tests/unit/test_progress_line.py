"""The console's line per batch."""

from __future__ import annotations

from pyspark_kafka_upgrade.run.progress import (
    progress_line,
    records_behind,
)


def test_a_batch_line_names_rows_malformed_watermark_lag_and_duration() -> None:
    event = {
        "batchId": 12,
        "name": "aggregates",
        "numInputRows": 1204,
        "eventTime": {"watermark": "2026-11-22T10:05:00.000Z"},
        "sources": [
            {"endOffset": {"t": {"0": 10, "1": 20}}, "latestOffset": '{"t": {"0": 30, "1": 40}}'}
        ],
        "durationMs": {"triggerExecution": 2100},
    }
    assert progress_line(event, malformed=3) == (
        "batch 12  aggregates  rows 1,204  malformed 3  "
        "watermark 2026-11-22T10:05:00Z  lag 40  2.1 s"
    )


def test_a_watermark_spark_has_not_moved_yet_reads_not_yet_set() -> None:
    event = {"batchId": 0, "name": "aggregates", "numInputRows": 40}
    event["eventTime"] = {"watermark": "1970-01-01T00:00:00.000Z"}
    assert "  watermark not yet set" in progress_line(event, malformed=0)
    event["eventTime"] = {"watermark": "1970-01-01T00:00:01.000Z"}
    assert "  watermark 1970-01-01T00:00:01Z" in progress_line(event, malformed=0)


def test_lag_is_unknown_when_a_source_does_not_report_its_latest_offsets() -> None:
    assert records_behind([{"endOffset": {"t": {"0": 1}}, "latestOffset": None}]) is None


def test_a_partition_only_in_the_latest_offsets_counts_from_zero() -> None:
    source = {"endOffset": {"t": {"0": 5}}, "latestOffset": {"t": {"0": 5, "1": 7}}}
    assert records_behind([source]) == 7
