"""`upgrade backfill`'s plan and result in words: the offsets it reads, what retention took
(the records and the event times whose windows stay as they are), then the windows it
rewrote and those it left, with why."""

from __future__ import annotations

from pyspark_kafka_upgrade._core.reconciliation.backfill_words import render_backfill
from pyspark_kafka_upgrade._domain.records.backfill import EndRange
from pyspark_kafka_upgrade._domain.records.backfill_report import (
    LeftSample,
    LeftWindows,
    OlderQuery,
)
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from support.backfill_reports import backfill_plan

MINUTE_MS = 60_000
BASE_MS = 1_763_805_600_000  # 2025-11-22T10:00:00Z
RETENTION = "records deleted by retention"


report = backfill_plan


HEAD = [
    "backfill page-views: windows from as far back as Kafka retains to what the pipeline has "
    "written, with generation 2's query (views = count(*), users = approx_count_distinct(user_id))",
    "  generation 1 wrote its windows without users",
]
OFFSETS = [
    "  page-views:0 offsets 5 to 90",
    "  page-views:1 offsets 0 to 90",
    "Kafka no longer retains 5 of the records those windows were read from:",
    "  page-views:0 offsets 0 to 4",
    "windows holding events of these times lost records to retention and are left as they are "
    "(never backfilled with a partial value):",
    "  2025-11-22 10:00:00Z to 2025-11-22 10:01:20Z",
]


def test_a_plan_says_what_it_would_read_and_what_retention_took_and_changes_nothing() -> None:
    assert render_backfill(report()).splitlines() == [
        *HEAD,
        "reads 177 records:",
        *OFFSETS,
        "which windows need it is decided when it runs: those whose rows lack the query's values "
        "or differ from them (run without --plan)",
    ]


def test_a_backfill_names_its_commit_the_windows_it_rewrote_and_those_it_left() -> None:
    done = report(
        applied=True,
        backfill=1,
        committed_in="output directory backfill-1",
        windows=3,
        rows=9,
        ranges=(
            EndRange(BASE_MS + 10 * MINUTE_MS, BASE_MS + 30 * MINUTE_MS),
            EndRange(BASE_MS + 40 * MINUTE_MS, BASE_MS + 50 * MINUTE_MS),
        ),
        left=(LeftWindows(RETENTION, 1), LeftWindows("open", 1)),
        left_sample=(
            LeftSample(BASE_MS, BASE_MS + 10 * MINUTE_MS, RETENTION),
            LeftSample(BASE_MS + 50 * MINUTE_MS, BASE_MS + 60 * MINUTE_MS, "open"),
        ),
    )

    assert render_backfill(done).splitlines() == [
        *HEAD,
        "read 177 records:",
        *OFFSETS,
        "backfill 1 committed (output directory backfill-1): rewrote 3 windows (9 rows), "
        "those ending in:",
        "  2025-11-22 10:10:00Z (exclusive) to 2025-11-22 10:30:00Z",
        "  2025-11-22 10:40:00Z (exclusive) to 2025-11-22 10:50:00Z",
        "left as they are:",
        "  1 window: records deleted by retention",
        "  1 window: open",
        "    2025-11-22 10:00:00Z to 2025-11-22 10:10:00Z: records deleted by retention",
        "    2025-11-22 10:50:00Z to 2025-11-22 11:00:00Z: open",
    ]


def test_windows_left_beyond_the_sample_are_counted() -> None:
    done = report(
        applied=True,
        backfill=2,
        committed_in="output directory backfill-2",
        windows=1,
        rows=1,
        ranges=(EndRange(BASE_MS + 20 * MINUTE_MS, BASE_MS + 30 * MINUTE_MS),),
        left=(LeftWindows(RETENTION, 3),),
        left_sample=(LeftSample(BASE_MS, BASE_MS + 10 * MINUTE_MS, RETENTION),),
    )
    lines = render_backfill(done).splitlines()

    assert lines[len(HEAD) + 1 + len(OFFSETS) :] == [
        "backfill 2 committed (output directory backfill-2): rewrote 1 window (1 row), "
        "those ending in:",
        "  2025-11-22 10:20:00Z (exclusive) to 2025-11-22 10:30:00Z",
        "left as they are:",
        "  3 windows: records deleted by retention",
        "    2025-11-22 10:00:00Z to 2025-11-22 10:10:00Z: records deleted by retention",
        "    … and 2 more",
    ]


def test_a_backfill_of_a_delta_table_names_the_tables_version_that_committed_it() -> None:
    table = "file:/data/output/table"
    done = report(
        applied=True,
        backfill=1,
        committed_in=f"version 12 of the Delta table {table}",
        windows=1,
        rows=3,
        ranges=(EndRange(BASE_MS, BASE_MS + 10 * MINUTE_MS),),
    )

    assert render_backfill(done).splitlines()[len(HEAD) + 1 + len(OFFSETS)] == (
        f"backfill 1 committed (version 12 of the Delta table {table}): rewrote 1 window "
        "(3 rows), those ending in:"
    )


def test_run_again_it_says_there_is_nothing_left_to_do() -> None:
    again = report(applied=True, deleted=(), partial_event_times=(), windows=0, rows=0)

    assert render_backfill(again).splitlines()[-1] == (
        "nothing to backfill: every window it can rewrite exactly holds the current query's values"
    )


def test_a_range_no_batch_read_has_nothing_to_read() -> None:
    empty = report(
        from_ms=BASE_MS,
        to_ms=BASE_MS + 60 * MINUTE_MS,
        older_queries=(),
        offsets={"start": {}, "end": {}},
        records=0,
        deleted=(),
        partial_event_times=(),
    )

    assert render_backfill(empty).splitlines() == [
        "backfill page-views: windows from 2025-11-22 10:00:00Z to 2025-11-22 11:00:00Z, with "
        "generation 2's query (views = count(*), users = approx_count_distinct(user_id))",
        "no committed batch read an event of the range: nothing to read",
    ]


def test_after_a_window_change_it_says_which_generation_counted_in_other_windows() -> None:
    sliding = WindowSpec(10 * MINUTE_MS, 5 * MINUTE_MS, 5 * MINUTE_MS)
    changed = report(older_queries=(OlderQuery(1, ("users",), sliding),))
    assert render_backfill(changed).splitlines()[1] == (
        "  generation 1 counted in windows of 10 minutes sliding every 5 minutes: this query's "
        "windows over its events were never written, they are computed from its batches"
    )
