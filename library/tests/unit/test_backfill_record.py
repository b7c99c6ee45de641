"""A backfill's commit: the windows it owns, its JSON, its directory's name."""

from __future__ import annotations

import json

import pytest

from pyspark_kafka_upgrade._domain.records.backfill import (
    BackfillCommit,
    BackfillRecordError,
    EndRange,
    backfill_directory_name,
    end_ranges,
    parse_backfill_directory_name,
)
from pyspark_kafka_upgrade._domain.records.signature import Aggregate
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

MINUTE = 60_000
SLIDING = WindowSpec(10 * MINUTE, 5 * MINUTE, 5 * MINUTE)


def commit(*ranges: EndRange, window: WindowSpec = SLIDING) -> BackfillCommit:
    return BackfillCommit(
        backfill=1,
        pipeline="page_views",
        generation=2,
        window=window,
        grouping_keys=("article_id",),
        aggregates=(
            Aggregate("views", "count(*)"),
            Aggregate("users", "approx_count_distinct(user_id)"),
        ),
        ranges=ranges,
        files=("part-00000.parquet",),
        windows=3,
        rows=7,
        created_at_ms=1_795_341_600_000,
    )


def test_consecutive_window_ends_share_one_range_and_a_gap_starts_another() -> None:
    ends = [10 * MINUTE, 15 * MINUTE, 20 * MINUTE, 35 * MINUTE]
    assert end_ranges(ends, 5 * MINUTE) == (
        EndRange(5 * MINUTE, 20 * MINUTE),
        EndRange(30 * MINUTE, 35 * MINUTE),
    )
    assert end_ranges([], 5 * MINUTE) == ()
    assert end_ranges([20 * MINUTE, 10 * MINUTE, 15 * MINUTE, 15 * MINUTE], 5 * MINUTE) == (
        EndRange(5 * MINUTE, 20 * MINUTE),
    )


def test_a_commit_owns_the_windows_of_its_grid_whose_end_is_in_a_range() -> None:
    owned = commit(EndRange(5 * MINUTE, 20 * MINUTE))
    assert owned.covers(0, 10 * MINUTE)
    assert owned.covers(10 * MINUTE, 20 * MINUTE)
    assert not owned.covers(-5 * MINUTE, 5 * MINUTE)  # its end is the range's exclusive bound
    assert not owned.covers(15 * MINUTE, 25 * MINUTE)  # ends after the range
    # Another grid's window over the same times (a window change) is not the backfill's.
    assert not owned.covers(0, 20 * MINUTE)
    assert not owned.covers(2 * MINUTE, 12 * MINUTE)


def test_a_commit_reads_back_from_its_json() -> None:
    original = commit(EndRange(5 * MINUTE, 20 * MINUTE), EndRange(30 * MINUTE, 35 * MINUTE))
    document = json.loads(json.dumps(original.to_json()))
    assert document["format_version"] == 1
    assert document["ranges"][0] == {"after_ms": 5 * MINUTE, "through_ms": 20 * MINUTE}
    assert BackfillCommit.from_json(document) == original


def test_a_newer_commit_is_refused_in_one_line() -> None:
    document = commit().to_json()
    document["format_version"] = 2
    with pytest.raises(BackfillRecordError, match="newer than the 1"):
        BackfillCommit.from_json(document)


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("backfill-1", 1),
        ("backfill-12", 12),
        ("backfill-0", None),
        ("backfill-01", None),
        ("backfill-", None),
        ("backfill-²", None),
        ("generation-1", None),
        ("backfill-1.tmp", None),
    ],
)
def test_only_a_backfill_directory_name_names_a_backfill(name: str, number: int | None) -> None:
    assert parse_backfill_directory_name(name) == number
    if number is not None:
        assert backfill_directory_name(number) == name
