"""A plan in words: every partition's reason when they are few, a screenful when they are many."""

from __future__ import annotations

import dataclasses
import json

import support.plans as plans
from pyspark_kafka_upgrade.model.plan import (
    PartitionRestart,
    UpgradePlan,
)
from pyspark_kafka_upgrade.model.restart import RestartKind
from pyspark_kafka_upgrade.planner.render import (
    render_json,
    render_plan,
)

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
