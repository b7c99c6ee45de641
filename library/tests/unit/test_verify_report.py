"""`verify`'s report as a document: a lossless JSON round trip, its verdict, and one clear line
for a document that is not a report this version reads."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pyspark_kafka_upgrade._domain.records.damage import Damage, DamagedFile, Part
from pyspark_kafka_upgrade._domain.records.verification import (
    DeletedRange,
    EventRef,
    PairState,
    QuarantinedRecord,
    Status,
    VerifyReport,
    VerifyReportError,
    WindowFinding,
)

WINDOW_START = 1_763_806_200_000  # 2025-11-22T10:10:00Z
WINDOW_END = 1_763_806_800_000  # 2025-11-22T10:20:00Z
# Every status, as `--json` writes the counts; the ones not given count 0.
NO_COUNTS = {
    "written twice": 0,
    "lost": 0,
    "different": 0,
    "unclassified": 0,
    "late by design": 0,
    "open": 0,
    "abandoned": 0,
    "exact": 0,
}


def report(counts: dict[str, int] | None = None, **changes: Any) -> VerifyReport:
    """A report with two findings, their events, a quarantined record and a deleted range."""
    lost = WindowFinding(
        window_start_ms=WINDOW_START,
        window_end_ms=WINDOW_END,
        keys={"article_id": "a-1"},
        status=Status.LOST,
        owner=2,
        writers=(),
        expected={"views": 2, "readers": 1},
        written=None,
        events=(
            EventRef("views", 0, 41, WINDOW_START + 1_250, PairState.SKIPPED.value, None),
            EventRef("views", 1, 7, WINDOW_START + 9_000, PairState.COUNTED.value, 3),
        ),
        more_events=5,
    )
    twice = WindowFinding(
        window_start_ms=WINDOW_START,
        window_end_ms=WINDOW_END,
        keys={"article_id": "b-2"},
        status=Status.WRITTEN_TWICE,
        owner=1,
        writers=(1, 2),
        expected={"views": 3, "readers": 2},
        written={"views": 3, "readers": 2},
    )
    fields: dict[str, Any] = {
        "pipeline": "page-views",
        "from_ms": 1_763_805_600_000,
        "to_ms": 1_763_809_200_000,
        "generations": (1, 2),
        "counts": {**NO_COUNTS, "exact": 40, "lost": 1, "written twice": 1}
        if counts is None
        else counts,
        "findings": (lost, twice),
        "more_findings": 0,
        "events_read": 1_234,
        "late_events": 3,
        "quarantined": 1,
        "quarantined_sample": (QuarantinedRecord("views", 0, 17, "not JSON"),),
        "deleted": (DeletedRange("views", 1, 0, 5),),
        "notes": ("generation 2: the ledger failed to record batches 4",),
        "offsets_read": {"start": {"views": {"0": 0, "1": 5}}, "end": {"views": {"0": 50, "1": 9}}},
    }
    return VerifyReport(**{**fields, **changes})


def through_json(made: VerifyReport) -> VerifyReport:
    return VerifyReport.from_json(json.loads(json.dumps(made.to_json())))


def document() -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(json.dumps(report().to_json()))
    return parsed


def test_a_report_round_trips_through_its_json_text() -> None:
    made = report()

    assert through_json(made) == made


def test_a_report_without_a_to_time_round_trips() -> None:
    made = report(to_ms=None, findings=(), deleted=(), notes=(), quarantined_sample=())

    assert through_json(made) == made


def test_a_report_with_only_the_statuses_seen_round_trips() -> None:
    # spark.reconcile counts only the statuses that occur.
    made = report(counts={"exact": 40, "lost": 1, "written twice": 1})

    assert through_json(made) == made


def test_the_json_says_whether_it_is_ok_and_counts_every_status() -> None:
    written = json.loads(json.dumps(report(counts={"exact": 4, "lost": 1}).to_json()))

    assert written["ok"] is False
    assert written["counts"] == {**NO_COUNTS, "exact": 4, "lost": 1}
    assert written["findings"][0]["status"] == "lost"
    assert written["findings"][0]["events"][1] == {
        "topic": "views",
        "partition": 1,
        "offset": 7,
        "event_time_ms": WINDOW_START + 9_000,
        "state": "counted",
        "batch_id": 3,
    }


# The statuses that break the upgrade's promise, by the command's help: exit code 1.
# What cannot be classified is said, and does not fail the check.
FAILING = {"lost", "written twice", "different"}


@pytest.mark.parametrize("status", list(Status), ids=str)
def test_ok_is_false_exactly_for_lost_written_twice_and_different(
    status: Status,
) -> None:
    made = report(counts={"exact": 10, status.value: 2})

    assert made.ok is (status.value not in FAILING)
    assert through_json(made).ok is made.ok


def test_a_report_of_only_exact_windows_is_ok() -> None:
    assert report(counts={"exact": 10}).ok is True
    assert report(counts={}).ok is True


def test_a_newer_format_version_is_refused() -> None:
    newer = {**document(), "format_version": 2}

    with pytest.raises(VerifyReportError, match="format version 2, newer than the 1"):
        VerifyReport.from_json(newer)


def _without(data: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    container: Any = data
    for step in path[:-1]:
        container = container[step]
    del container[path[-1]]
    return data


def _with(data: dict[str, Any], path: tuple[str | int, ...], value: object) -> dict[str, Any]:
    container: Any = data
    for step in path[:-1]:
        container = container[step]
    container[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("pipeline",), 3, "'pipeline'"),
        (("from_ms",), "2025-11-22", "'from_ms'"),
        (("to_ms",), 1.5, "'to_ms'"),
        (("events_read",), True, "'events_read'"),
        (("notes",), [1], "'notes'"),
        (("offsets_read",), [], "'offsets_read'"),
        (("counts",), [], "'counts'"),
        (("deleted", 0, "first"), "0", "'deleted[0].first'"),
        (("quarantined_sample", 0, "reason"), None, "'quarantined_sample[0].reason'"),
        (("findings", 0, "window_end_ms"), "later", "'window_end_ms'"),
        (("findings", 0, "events", 0, "offset"), -1.0, "'events[0].offset'"),
    ],
)
def test_a_malformed_field_is_named(path: tuple[str | int, ...], value: object, named: str) -> None:
    with pytest.raises(VerifyReportError, match=re.escape(named)):
        VerifyReport.from_json(_with(document(), path, value))


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (("format_version",), "'format_version'"),
        (("more_findings",), "'more_findings'"),
        (("findings", 1, "written"), "'written'"),
        (("findings", 0, "events", 1, "batch_id"), "'events[1].batch_id'"),
    ],
)
def test_a_missing_field_is_named(path: tuple[str | int, ...], named: str) -> None:
    with pytest.raises(VerifyReportError, match=re.escape(f"has no field {named}")):
        VerifyReport.from_json(_without(document(), path))


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("generations",), "1,2", "generations"),
        (("findings",), {}, "findings"),
        (("findings", 0, "writers"), "1", "writers"),
        (("counts", "lost"), "one", "counts"),
        (("findings", 0, "status"), "gone", "status"),
    ],
)
def test_a_malformed_list_count_or_status_is_named(
    path: tuple[str | int, ...], value: object, named: str
) -> None:
    with pytest.raises(VerifyReportError, match=named):
        VerifyReport.from_json(_with(document(), path, value))


def test_a_document_that_is_no_object_is_refused() -> None:
    with pytest.raises(VerifyReportError, match="must be a JSON object"):
        VerifyReport.from_json([])


# -- Committed output verify could not read ------------------------------------------------

DAMAGED = DamagedFile(
    generation=2,
    part=Part.COMMITTED_FILE,
    path="file:///data/output/generation-2/part-00000-a.snappy.parquet",
    damage=Damage.UNREADABLE,
    detail="cannot be read by Spark (FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER: "
    "ChecksumException: Checksum error: at 512 exp: 1 got: 2)",
)


def test_damaged_output_round_trips_and_fails_the_check_alone() -> None:
    made = report(counts={"exact": 10}, damaged=(DAMAGED,))

    assert made.ok is False
    assert through_json(made) == made
    written = json.loads(json.dumps(made.to_json()))
    assert written["ok"] is False
    assert written["damaged"] == [
        {
            "generation": 2,
            "part": "committed file",
            "path": DAMAGED.path,
            "damage": "unreadable",
            "detail": DAMAGED.detail,
            "message": "generation 2's committed file part-00000-a.snappy.parquet cannot be read "
            "by Spark (FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER: ChecksumException: Checksum "
            "error: at 512 exp: 1 got: 2): the output was changed outside the pipeline, or the "
            "storage damaged it; restore it from a backup",
        }
    ]


def test_a_document_written_before_damaged_output_was_reported_has_none() -> None:
    # Format 1 without the field: what 0.5.1 wrote. The field is additive, so no new version.
    older = document()
    del older["damaged"]

    assert VerifyReport.from_json(older).damaged == ()
    assert VerifyReport.from_json(older) == report()


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("damaged",), {}, "'damaged'"),
        (("damaged", 0, "generation"), "2", "'damaged[0].generation'"),
        (("damaged", 0, "damage"), "eaten", "'damaged[0].damage'"),
        (("damaged", 0, "part"), "shelf", "'damaged[0].part'"),
    ],
)
def test_a_malformed_damaged_file_is_named(
    path: tuple[str | int, ...], value: object, named: str
) -> None:
    damaged = json.loads(json.dumps(report(damaged=(DAMAGED,)).to_json()))

    with pytest.raises(VerifyReportError, match=re.escape(named)):
        VerifyReport.from_json(_with(damaged, path, value))
