"""`verify`'s report in words: the summary, every window that is not exact with its events,
the verdict, and the limits of what was checked, only when there are any."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyspark_kafka_upgrade._core.reconciliation.verify_words import (
    render_report,
    summary_line,
    verdict,
)
from pyspark_kafka_upgrade._domain.records.damage import Damage, DamagedFile, Part
from pyspark_kafka_upgrade._domain.records.verification import (
    DeletedRange,
    EventRef,
    PairState,
    QuarantinedRecord,
    Status,
    VerifyReport,
    WindowFinding,
)

FROM_MS = 1_763_805_600_000  # 2025-11-22T10:00:00Z
TO_MS = 1_763_809_200_000  # 2025-11-22T11:00:00Z
WINDOW_START = 1_763_806_200_000  # 2025-11-22T10:10:00Z
WINDOW_END = 1_763_806_800_000  # 2025-11-22T10:20:00Z


@pytest.fixture
def local_time_five_hours_behind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's own time zone five hours behind UTC (POSIX ``EST+5``, no DST)."""
    monkeypatch.setenv("TZ", "EST+5")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def report(counts: dict[str, int], **changes: Any) -> VerifyReport:
    fields: dict[str, Any] = {
        "pipeline": "page-views",
        "from_ms": FROM_MS,
        "to_ms": None,
        "generations": (1, 2),
        "counts": counts,
        "findings": (),
        "more_findings": 0,
        "events_read": 1_234,
        "late_events": 3,
        "quarantined": 0,
        "quarantined_sample": (),
        "deleted": (),
        "notes": (),
    }
    return VerifyReport(**{**fields, **changes})


LOST = WindowFinding(
    window_start_ms=WINDOW_START,
    window_end_ms=WINDOW_END,
    keys={"article_id": "a-1", "region": "eu"},
    status=Status.LOST,
    owner=2,
    writers=(),
    expected={"views": 2},
    written=None,
    events=(
        # 10:15:00.250: the millisecond shows; offset 41 was never read by generation 2.
        EventRef("views", 0, 41, 1_763_806_500_250, PairState.SKIPPED.value, None),
        # 10:15:10, read by generation 2's batch 3.
        EventRef("views", 1, 7, 1_763_806_510_000, PairState.COUNTED.value, 3),
    ),
    more_events=4,
)
DIFFERENT = WindowFinding(
    window_start_ms=WINDOW_START,
    window_end_ms=WINDOW_END,
    keys={"article_id": "b-2", "region": "us"},
    status=Status.DIFFERENT,
    owner=1,
    writers=(1,),
    expected={"views": 3},
    written={"views": 2},
)
TWICE = WindowFinding(
    window_start_ms=WINDOW_START,
    window_end_ms=WINDOW_END,
    keys={"article_id": "c-3", "region": "eu"},
    status=Status.WRITTEN_TWICE,
    owner=2,
    writers=(1, 2),
    expected={"views": 5},
    written={"views": 5},
)


def test_the_summary_says_what_was_checked_then_the_promise_then_what_is_by_design() -> None:
    counts = {"late by design": 4, "open": 5, "different": 3, "written twice": 2, "lost": 1}
    made = report({**counts, "exact": 7})

    # 7 + 1 + 2 + 3 + 4 + 5 = 22 windows.
    assert summary_line(made) == (
        "22 windows checked: 7 exact, 1 lost, 2 written twice, 3 different, "
        "4 late by design, 5 open"
    )


def test_the_summary_names_unclassified_and_abandoned_windows_only_when_there_are_any() -> None:
    none = report({"exact": 2})
    some = report({"exact": 2, "abandoned": 6, "unclassified": 1})

    assert summary_line(none) == (
        "2 windows checked: 2 exact, 0 lost, 0 written twice, 0 different, 0 late by design, 0 open"
    )
    # 2 + 6 + 1 = 9 windows.
    assert summary_line(some) == (
        "9 windows checked: 2 exact, 0 lost, 0 written twice, 0 different, "
        "0 late by design, 0 open, 1 unclassified, 6 abandoned"
    )


def test_a_finding_shows_its_window_keys_writers_values_and_events() -> None:
    text = render_report(
        report({"exact": 1, "lost": 1, "different": 1}, findings=(LOST, DIFFERENT))
    )
    lines = text.splitlines()

    start = lines.index("windows that are not exact:")
    assert lines[start + 1 : start + 9] == [
        "  LOST: window 2025-11-22 10:10:00Z to 2025-11-22 10:20:00Z article_id='a-1', "
        "region='eu' (generation 2's; written by nobody)",
        "    expected views=2",
        "    views:0@41 2025-11-22 10:15:00.250Z never read",
        "    views:1@7 2025-11-22 10:15:10Z counted, batch 3",
        "    … and 4 more events",
        "  DIFFERENT: window 2025-11-22 10:10:00Z to 2025-11-22 10:20:00Z article_id='b-2', "
        "region='us' (generation 1's; written by 1)",
        "    expected views=3, written views=2",
        "",
    ]


@pytest.mark.usefixtures("local_time_five_hours_behind")
def test_times_are_shown_in_utc_whatever_the_machines_zone() -> None:
    text = render_report(report({"lost": 1}, findings=(LOST,)))

    assert "windows from 2025-11-22 10:00:00Z to what the pipeline has read" in text
    assert "window 2025-11-22 10:10:00Z to 2025-11-22 10:20:00Z" in text
    assert "views:0@41 2025-11-22 10:15:00.250Z never read" in text


def test_a_window_written_twice_names_both_writers() -> None:
    text = render_report(report({"written twice": 1}, findings=(TWICE,), more_findings=12))

    assert "(generation 2's; written by 1, 2)" in text
    assert "    expected views=5, written views=5" in text
    assert "  … and 12 more (use --json, or a narrower range)" in text


def test_the_head_says_the_range_generations_and_what_was_read() -> None:
    open_ended = render_report(report({"exact": 1})).splitlines()
    bounded = render_report(report({"exact": 1}, to_ms=TO_MS, generations=())).splitlines()

    assert open_ended[:2] == [
        "verify page-views: windows from 2025-11-22 10:00:00Z to what the pipeline has read, "
        "generations 1, 2",
        "read back 1234 records; 3 (event, window) pairs late by design; 0 quarantined",
    ]
    assert bounded[0] == (
        "verify page-views: windows from 2025-11-22 10:00:00Z to 2025-11-22 11:00:00Z, "
        "generations none"
    )


@pytest.mark.parametrize(
    "counts",
    [
        {"exact": 3},
        {"exact": 3, "late by design": 2, "open": 1, "abandoned": 4},
        {},
    ],
)
def test_the_verdict_is_ok_when_nothing_breaks_the_promise(counts: dict[str, int]) -> None:
    made = report(counts)

    assert verdict(made) == "OK: nothing lost, nothing written twice, nothing different."
    assert render_report(made).splitlines()[-1] == verdict(made)


def test_the_verdict_names_every_failing_count_most_severe_first() -> None:
    made = report({"exact": 9, "lost": 2, "unclassified": 4, "different": 3, "written twice": 1})

    # Unclassified windows are said in the summary, not in the verdict: they do not fail.
    assert verdict(made) == "NOT OK: 1 written twice, 2 lost, 3 different."
    assert render_report(made).splitlines()[-1] == verdict(made)


def test_quarantine_deleted_ranges_and_notes_are_shown_when_there_are_any() -> None:
    made = report(
        {"exact": 1},
        quarantined=3,
        quarantined_sample=(
            QuarantinedRecord("views", 0, 17, "not JSON"),
            QuarantinedRecord("views", 1, 4, "no event_time"),
        ),
        deleted=(DeletedRange("views", 1, 0, 25), DeletedRange("views", 2, 10, 11)),
        notes=("first note", "second note"),
    )
    lines = render_report(made).splitlines()

    def section(head: str, length: int) -> list[str]:
        start = lines.index(head)
        return lines[start : start + length]

    assert section("quarantined records in the range (3):", 4) == [
        "quarantined records in the range (3):",
        "  views:0@17: not JSON",
        "  views:1@4: no event_time",
        "  … and 1 more",  # 3 quarantined, 2 listed
    ]
    # DeletedRange ends are exclusive: [0, 25) is offsets 0 to 24.
    assert section("deleted by retention before verify read them (the rest is verified):", 3) == [
        "deleted by retention before verify read them (the rest is verified):",
        "  views:1 offsets 0 to 24",
        "  views:2 offsets 10 to 10",
    ]
    assert section("notes:", 3) == ["notes:", "  first note", "  second note"]


def test_empty_sections_are_left_out() -> None:
    text = render_report(report({"exact": 1}))

    for head in ("windows that are not exact", "quarantined records", "deleted by", "notes:"):
        assert head not in text
    # The three head lines, a blank line, the verdict.
    assert len(text.splitlines()) == 5


GONE = DamagedFile(
    2, Part.COMMITTED_FILE, "file:///data/output/generation-2/part-0.parquet", Damage.MISSING,
    "is missing",
)  # fmt: skip
NO_ACCESS = DamagedFile(
    3, Part.SINK_LOG, "/data/output/generation-3/_spark_metadata", Damage.NO_ACCESS,
    "cannot be read (permission denied)",
)  # fmt: skip


def test_damaged_output_has_its_section_and_leads_the_verdict() -> None:
    made = report({"exact": 5, "lost": 2}, findings=(LOST,), damaged=(GONE, NO_ACCESS))
    lines = render_report(made).splitlines()

    start = lines.index(
        "committed output that could not be read (2): left out of the comparison, so the "
        "windows whose rows it held show as lost or different above"
    )
    assert lines[start + 1 : start + 3] == [
        "  generation 2's committed file part-0.parquet is missing: the output was changed "
        "outside the pipeline; restore it from a backup",
        "  generation 3's sink log /data/output/generation-3/_spark_metadata cannot be read "
        "(permission denied): give the user that runs this command read access to it and to "
        "the directories above it",
    ]
    assert lines[-1] == "NOT OK: 2 damaged output files (generation 2, 3), 2 lost."


def test_damaged_output_alone_is_not_ok() -> None:
    made = report({"exact": 7}, damaged=(GONE,))

    assert verdict(made) == "NOT OK: 1 damaged output file (generation 2)."
