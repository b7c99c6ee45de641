"""A plan in words: every partition's reason when they are few, a screenful when they are many."""

from __future__ import annotations

import dataclasses
import json

import pytest

import support.plans as plans
from pyspark_kafka_upgrade._core.planner.plan_words import (
    render_json,
    render_plan,
)
from pyspark_kafka_upgrade._domain.records.plan import (
    PartitionRestart,
    UpgradePlan,
)
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

# A terminal of 100 columns and 50 rows: prose wraps, a table row must not.
SCREEN_LINES = 50
SCREEN_COLUMNS = 100


def with_partitions(count: int) -> UpgradePlan:
    """Partitions of one topic: the first half tightened, the rest with nothing to rebuild."""
    partitions = []
    for number in range(count):
        feeds = number < count // 2
        partitions.append(
            PartitionRestart(
                topic="page-views",
                partition=number,
                restart_offset=1_000 + number if feeds else 5_000,
                quarantine_offset=5_000,
                old_end_offset=5_000,
                kind=RestartKind.FIRST_FEEDING_RECORD if feeds else RestartKind.NO_FEEDING_RECORD,
                reason=f"offset {1_000 + number} holds the first record of partition {number}"
                if feeds
                else f"no record of partition {number} can fall in an open window",
            )
        )
    return dataclasses.replace(plans.sample_plan(), partitions=tuple(partitions))


def test_two_hundred_partitions_fit_a_screen_with_reasons_grouped_by_kind() -> None:
    plan = with_partitions(200)
    lines = render_plan(plan).splitlines()
    wrapped = sum(max(1, -(-len(line) // SCREEN_COLUMNS)) for line in lines)
    assert wrapped <= SCREEN_LINES, "\n".join(lines)
    replay = sum(5_000 - (1_000 + number) for number in range(100))
    table = [line for line in lines if line.startswith("page-views ")]
    assert all(len(line) <= SCREEN_COLUMNS for line in table)
    assert table == [
        f"page-views  0-99       1000-1099  5000        5000     {replay}  first-feeding-record",
        "page-views  100-199    5000       5000        5000     0       no-feeding-record",
    ]
    assert any(line.startswith("  first-feeding-record: 100 partition(s)") for line in lines)
    assert any(line.startswith("  no-feeding-record: 100 partition(s)") for line in lines)
    assert f"Records to replay: {replay}." in lines
    # The JSON keeps every partition's own reason.
    reasons = [p["reason"] for p in json.loads(render_json(plan))["partitions"]]
    assert len(reasons) == 200 and len(set(reasons)) == 200


def test_a_few_partitions_each_get_a_row_and_their_whole_reason() -> None:
    plan = with_partitions(2)
    text = render_plan(plan)
    assert (
        "page-views  0          1000     5000        5000     4000    first-feeding-record" in text
    )
    assert "page-views partition 0 restarts at 1000: offset 1000 holds the first record" in text
    assert "page-views partition 1 restarts at 5000: no record of partition 1 can fall" in text


def test_the_words_say_where_the_new_generation_starts_and_with_which_filter() -> None:
    text = render_plan(with_partitions(2))
    assert "replay filter window.end > 1763807040000 (W = 2025-11-22T10:24:00Z)" in text
    assert "writing to file:///data/output/generation-2." in text
    assert "Late records: not counted (--no-scan)." in text


def test_the_quarantine_column_is_explained_under_the_table() -> None:
    lines = render_plan(with_partitions(2)).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("topic "))
    said = lines[header + 3]  # under the header and the two partitions' rows
    assert said.startswith("quarantine: where the new quarantine query starts, where the old ")
    assert "does not replay" in said and "not quarantined again" in said


E_MS = 1_763_807_400_000  # 2025-11-22T10:30:00Z


@pytest.mark.parametrize(
    ("slide_minutes", "shown"),
    [
        (10, "2025-11-22T10:30:00Z-10:40:00Z"),
        (5, "2025-11-22T10:25:00Z-10:35:00Z, 2025-11-22T10:30:00Z-10:40:00Z"),
    ],
    ids=["tumbling", "sliding"],
)
def test_a_window_change_says_which_old_windows_neither_generation_writes(
    slide_minutes: int, shown: str
) -> None:
    plan = dataclasses.replace(
        with_partitions(2),
        window=WindowSpec(600_000, slide_minutes * 60_000, 300_000),
        replay_filter=ReplayFilter(event_time_from_ms=E_MS),
    )
    text = render_plan(plan)
    assert (
        f"The old windows open at E ({shown}) are written by neither generation: a dashboard "
        "of the old windows shows a gap there"
    ) in text
    # The filter is named by its own bound, E, not by W.
    assert f"replay filter event_time >= {E_MS} (E = 2025-11-22T10:30:00Z), writing" in text
    assert "gap" not in render_plan(with_partitions(2))
    # The replay keeps events by time, not windows by W.
    assert "the replay starts there and keeps the events from E on (below)." in text
    assert "drops every window ending at or before W" not in text
    assert "drops every window ending at or before W" in render_plan(with_partitions(2))
