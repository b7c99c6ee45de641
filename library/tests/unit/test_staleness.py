"""A reviewed plan against the world now: each thing that moved is named, nothing else is."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyspark_kafka_upgrade.testing._fake_world as fake
from pyspark_kafka_upgrade._core.planner.decide import (
    batch_level,
)
from pyspark_kafka_upgrade._core.planner.staleness import (
    level_moved,
    what_moved,
)
from pyspark_kafka_upgrade._domain.records.replay_filter import (
    ReplayFilter,
)
from pyspark_kafka_upgrade._domain.values.words import (
    when,
)


def test_nothing_moved_right_after_planning(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    assert what_moved(plan, fake.facts_of(world, fake.VERSION_2, latest=False)) == []


def test_a_batch_committed_since_the_plan_is_named(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    world.produce(range(40, 50), partition=0)
    world.produce(range(40, 50), partition=1)
    world.run_batch()
    moved = what_moved(plan, fake.facts_of(world, fake.VERSION_2, latest=False))
    assert moved == [
        "generation 1 committed up to batch 4 since the plan, which was made after batch 3"
    ]


def test_a_changed_setting_is_named_with_its_values(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    facts = fake.facts_of(world, fake.VERSION_2, "sink.format=orc", latest=False)
    moved = what_moved(plan, facts)
    assert moved == ["the code or settings changed since the plan: sink.format: 'parquet' -> 'orc'"]


def test_records_deleted_by_retention_since_the_plan_are_named(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    world.broker.earliest_of[(fake.TOPIC, 1)] = 23
    moved = what_moved(plan, fake.facts_of(world, fake.VERSION_2, latest=False))
    assert moved == [
        f"{fake.TOPIC} partition 1: offsets 20-22 that the plan replays were deleted by "
        "retention since"
    ]


def test_a_partition_added_since_the_plan_is_named(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    world.broker.partitions_of[fake.TOPIC] = 3
    moved = what_moved(plan, fake.facts_of(world, fake.VERSION_2, latest=False))
    assert moved == [
        f"the subscribed partitions changed since the plan (new: {fake.TOPIC}:2; gone: none)"
    ]


def test_another_plan_taking_the_generation_number_is_named(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    facts = dataclasses.replace(
        fake.facts_of(world, fake.VERSION_2, latest=False), next_generation=3
    )
    moved = what_moved(plan, facts)
    assert "generation 2 was taken by another plan since; the next free number is 3" in moved


def test_a_batch_the_sink_holds_but_the_checkpoint_never_committed_is_named(
    tmp_path: Path,
) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    # A run killed between the sink's commit of batch 4 and the checkpoint's commits/4:
    # planning from batch 3 would write batch 4's windows again.
    facts = dataclasses.replace(
        fake.facts_of(world, fake.VERSION_2, latest=False), sink_last_batch=4
    )
    assert what_moved(plan, facts) == [
        "generation 1's output holds batch 4, which the plan's checkpoint never committed: "
        "a run was killed mid-commit since the plan"
    ]


def test_a_change_to_how_records_are_parsed_is_named(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    # Records over the old limit were malformed to the scan; under a higher one they are
    # events, and the plan may restart past some of them.
    facts = fake.facts_of(world, fake.VERSION_2, "events.max_value_bytes=1024", latest=False)
    moved = what_moved(plan, facts)
    assert len(moved) == 1 and moved[0].startswith("how records are parsed changed"), moved


def test_a_plan_over_a_generation_started_from_a_plan_is_not_stale(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    facts = fake.facts_of(world, fake.VERSION_2)
    # Generation 1 itself started from a plan whose W is above its checkpoint's (it stopped
    # right after its replay batch): W is never taken below it, on planning or on applying.
    higher = fake.W + 7 * fake.MINUTE_MS
    earlier = dataclasses.replace(
        fake.plan_of(world, facts), replay_filter=ReplayFilter(window_end_after_ms=higher)
    )
    carried = dataclasses.replace(facts, old_plan=earlier)
    plan = fake.plan_of(world, carried)
    assert plan.watermark_ms == higher
    again = dataclasses.replace(
        fake.facts_of(world, fake.VERSION_2, latest=False), old_plan=earlier
    )
    assert what_moved(plan, again) == []
    assert level_moved(plan, batch_level(again, accept_data_loss=True)) == []
    # Without the earlier plan the facts give the checkpoint's own W: that is named.
    plain = fake.facts_of(world, fake.VERSION_2, latest=False)
    assert level_moved(plan, batch_level(plain, accept_data_loss=True)) == [
        f"the facts now give W = {when(fake.W)}, the plan {when(higher)}",
        f"the replay filter would now be window.end > {fake.W}, the plan's is "
        f"window.end > {higher}",
    ]


def test_a_hand_edited_replay_filter_is_refused(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    edited = dataclasses.replace(plan, replay_filter=ReplayFilter())
    facts = fake.facts_of(world, fake.VERSION_2, latest=False)
    assert level_moved(edited, batch_level(facts, accept_data_loss=True)) == [
        f"the replay filter would now be window.end > {fake.W}, the plan's is none"
    ]


def test_a_change_of_where_new_partitions_start_is_named(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    world.broker.partitions_of["clicks"] = 1
    both = f"kafka.topics={fake.TOPIC},clicks"
    plan = fake.plan_of(world, fake.facts_of(world, both))
    facts = fake.facts_of(world, both, "kafka.starting_offsets=latest", latest=False)
    assert what_moved(plan, facts) == [
        "kafka.starting_offsets changed since the plan: partitions the old generation never "
        "read would start at -1, the plan starts them as reviewed"
    ]
