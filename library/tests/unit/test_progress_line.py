"""The console's line per batch."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pyspark_kafka_upgrade._application.run.progress import (
    progress_line,
    records_behind,
    rows_written,
)


def aggregates_event(removed: int) -> dict[str, Any]:
    """A progress event of the windowed query as Spark 4.2 writes it: the file sink reports
    no output count; the aggregation's one state operator evicted ``removed`` rows."""
    return {
        "batchId": 12,
        "name": "aggregates",
        "numInputRows": 1204,
        "eventTime": {"watermark": "2026-11-22T10:05:00.000Z"},
        "stateOperators": [
            {"operatorName": "stateStoreSave", "numRowsTotal": 9, "numRowsRemoved": removed}
        ],
        "sink": {"description": "FileSink[file:/data/output]", "numOutputRows": -1},
        "sources": [
            {"endOffset": {"t": {"0": 10, "1": 20}}, "latestOffset": '{"t": {"0": 30, "1": 40}}'}
        ],
        "durationMs": {"triggerExecution": 2100},
    }


def test_a_batch_line_names_input_rows_rows_written_malformed_watermark_lag_and_duration() -> None:
    assert progress_line(aggregates_event(6), malformed=3) == (
        "batch 12  aggregates  input rows 1,204  rows written 6  malformed 3  "
        "watermark 2026-11-22T10:05:00Z  lag 40  2.1 s"
    )


def test_the_input_rows_keep_the_words_scripts_searched_for() -> None:
    # Before, the field read "rows 1,204": a script searching for that still finds it.
    line = progress_line(aggregates_event(0), malformed=0)
    found = re.search(r"rows ([0-9,]+)", line)
    assert found is not None and found.group(1) == "1,204"


@pytest.mark.parametrize(
    ("change", "written"),
    [
        ({}, 6),
        # A sink that counts its rows is believed first.
        ({"sink": {"numOutputRows": 4}}, 4),
        # No stateful operator (the quarantine query): nothing tells the rows written.
        ({"stateOperators": []}, None),
        # Another stateful operator besides the aggregation: its evictions are no output.
        (
            {
                "stateOperators": [
                    {"operatorName": "dedupeWithinWatermark", "numRowsRemoved": 5},
                    {"operatorName": "stateStoreSave", "numRowsRemoved": 6},
                ]
            },
            None,
        ),
    ],
    ids=["file-sink", "sink-counts", "stateless", "two-operators"],
)
def test_rows_written_come_from_the_sink_or_the_aggregations_evictions(
    change: dict[str, Any], written: int | None
) -> None:
    event = {**aggregates_event(6), **change}
    assert rows_written(event) == written
    assert ("  rows written " in progress_line(event, malformed=None)) is (written is not None)


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
