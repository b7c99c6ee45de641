"""A reviewed plan against the world now: each thing that moved is named, nothing else is."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import support.fake_world as fake
from {{ cookiecutter.package_name }}.upgrade.staleness import (
    what_moved,
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
