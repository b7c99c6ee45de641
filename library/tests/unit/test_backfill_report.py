"""`upgrade backfill --json`: the plan or the result as a document that reads back as it was,
and one clear line for a document that is not a report this version reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pyspark_kafka_upgrade._domain.records.backfill import EndRange
from pyspark_kafka_upgrade._domain.records.backfill_report import (
    BackfillReport,
    BackfillReportError,
    LeftSample,
    LeftWindows,
    OlderQuery,
)
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from support.backfill_reports import backfill_plan

MINUTE_MS = 60_000
BASE_MS = 1_763_805_600_000  # 2025-11-22T10:00:00Z


plan = backfill_plan


def applied(**changes: Any) -> BackfillReport:
    """What the backfill did: the windows it rewrote, those it left and why."""
    fields: dict[str, Any] = {
        "applied": True,
        "from_ms": BASE_MS,
        "to_ms": BASE_MS + 60 * MINUTE_MS,
        "backfill": 1,
        "committed_in": "output directory backfill-1",
        "windows": 2,
        "rows": 6,
        "ranges": (EndRange(BASE_MS + 10 * MINUTE_MS, BASE_MS + 30 * MINUTE_MS),),
        "left": (LeftWindows("records deleted by retention", 1), LeftWindows("open", 1)),
        "left_sample": (
            LeftSample(BASE_MS, BASE_MS + 10 * MINUTE_MS, "records deleted by retention"),
            LeftSample(BASE_MS + 50 * MINUTE_MS, BASE_MS + 60 * MINUTE_MS, "open"),
        ),
    }
    return plan(**{**fields, **changes})


@pytest.mark.parametrize(
    "report",
    [
        plan(),
        applied(),
        applied(backfill=None, committed_in=None, windows=0, rows=0),
        # After a window change: the generation that counted in other windows, and its grid.
        plan(older_queries=(OlderQuery(1, ("users",), WindowSpec(600_000, 300_000, 300_000)),)),
    ],
)
def test_the_document_reads_back_as_the_report_it_was(report: BackfillReport) -> None:
    document = json.loads(json.dumps(report.to_json()))
    assert BackfillReport.from_json(document) == report


def test_the_document_states_its_format_and_its_event_times_as_pairs() -> None:
    document = json.loads(json.dumps(applied().to_json()))
    assert document["format_version"] == 1
    assert document["partial_event_times"] == [[BASE_MS, BASE_MS + 80_000]]
    assert document["ranges"] == [
        {"after_ms": BASE_MS + 10 * MINUTE_MS, "through_ms": BASE_MS + 30 * MINUTE_MS}
    ]
    assert document["left"][0] == {"reason": "records deleted by retention", "windows": 1}
    assert document["committed_in"] == "output directory backfill-1"
    assert plan().to_json()["committed_in"] is None


def test_a_newer_document_is_refused_in_one_line() -> None:
    document = plan().to_json()
    document["format_version"] = 2
    with pytest.raises(BackfillReportError, match="format version 2, newer than the 1"):
        BackfillReport.from_json(document)


@pytest.mark.parametrize("spans", [[[1, 2, 3]], [["1", 2]], [[True, 2]], [5]])
def test_event_times_that_are_not_pairs_of_integers_are_refused_by_their_place(
    spans: list[object],
) -> None:
    document = plan().to_json()
    document["partial_event_times"] = spans
    with pytest.raises(BackfillReportError, match=r"'partial_event_times\[0\]' must be"):
        BackfillReport.from_json(document)
