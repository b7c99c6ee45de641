"""From gathered facts to the plan, without Spark or Kafka: the glue between the planner's
arithmetic and the commands. The facts come from a hand-made world
(``pyspark_kafka_upgrade.testing._fake_world``): real checkpoint files and a real SQLite
ledger, a broker stand-in, records in memory."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import pyspark_kafka_upgrade.testing._fake_world as fake
from pyspark_kafka_upgrade._core.planner.decide import (
    advise_upgrade,
    batch_level,
    decide,
    scan_request,
)
from pyspark_kafka_upgrade._core.planner.retention import (
    OffsetsOutOfRetentionError,
)
from pyspark_kafka_upgrade._domain.records.advice import Verdict
from pyspark_kafka_upgrade._domain.records.handoff import Handoff
from pyspark_kafka_upgrade._domain.records.ledger import (
    GenerationRecord,
)
from pyspark_kafka_upgrade._domain.records.record_errors import UpgradeError
from pyspark_kafka_upgrade._domain.records.replay_filter import (
    ReplayFilter,
)
from pyspark_kafka_upgrade._domain.records.restart import RestartKind


def test_each_partition_restarts_at_its_first_record_that_can_reach_an_open_window(
    tmp_path: Path,
) -> None:
    world = fake.make_world(tmp_path)
    facts = fake.facts_of(world, fake.VERSION_2)
    plan = fake.plan_of(world, facts)
    t_min = fake.W - fake.W % (10 * fake.MINUTE_MS)  # the start of the window W falls in
    assert plan.advice.verdict is Verdict.NEEDS_NEW_CHECKPOINT
    assert plan.watermark_ms == fake.W
    assert (
        plan.restart_offsets
        == fake.first_feeding_offsets(world, t_min)
        == {
            (fake.TOPIC, 0): 20,
            (fake.TOPIC, 1): 20,
        }
    )
    assert plan.replay_filter == ReplayFilter(window_end_after_ms=fake.W)
    assert plan.records_to_replay == 2 * 20
    assert {p.kind for p in plan.partitions} == {RestartKind.FIRST_FEEDING_RECORD}
    assert plan.late_records == 0
    assert (plan.from_generation, plan.to_generation) == (1, 2)


def test_the_advice_alone_when_the_checkpoint_carries_the_change(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    assert advise_upgrade(fake.facts_of(world)).verdict is Verdict.SAME
    assert advise_upgrade(fake.facts_of(world, "window.watermark_delay=9 minutes")).verdict is (
        Verdict.SAFE
    )


def test_without_a_scan_the_restart_is_the_first_feeding_batch_and_late_is_not_counted(
    tmp_path: Path,
) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2, latest=False), scan=False)
    # Batch 2 (minutes 20-29) is the first whose max event time reaches T_min = 10:20.
    assert plan.restart_batch == 2
    assert plan.restart_offsets == {(fake.TOPIC, 0): 20, (fake.TOPIC, 1): 20}
    assert {p.kind for p in plan.partitions} == {RestartKind.FIRST_FEEDING_BATCH}
    assert plan.late_records is None
    assert plan.late_before_event_ms == fake.W - fake.W % (10 * fake.MINUTE_MS)


@pytest.mark.parametrize("starting", ["earliest", "latest"])
def test_a_partition_added_to_a_topic_already_read_starts_at_earliest(
    tmp_path: Path, starting: str
) -> None:
    world = fake.make_world(tmp_path)
    world.broker.partitions_of[fake.TOPIC] = 3
    facts = fake.facts_of(world, fake.VERSION_2, f"kafka.starting_offsets={starting}")
    plan = fake.plan_of(world, facts)
    added = [p for p in plan.partitions if p.kind is RestartKind.SUBSCRIBED]
    # Spark reads a partition that appears while a query runs from its earliest offset:
    # starting it at latest would skip what was produced to it since it appeared.
    assert [(p.key, p.restart_offset, p.quarantine_offset) for p in added] == [
        ((fake.TOPIC, 2), -2, -2)
    ]
    assert added[0].old_end_offset is None
    assert "as Spark starts a partition that appears while a query runs" in added[0].reason
    # Both connectors want every subscribed partition named in startingOffsets.
    assert set(plan.restart_offsets) == {(fake.TOPIC, 0), (fake.TOPIC, 1), (fake.TOPIC, 2)}


@pytest.mark.parametrize(("starting", "position"), [("earliest", -2), ("latest", -1)])
def test_a_newly_subscribed_topic_starts_where_the_settings_say(
    tmp_path: Path, starting: str, position: int
) -> None:
    world = fake.make_world(tmp_path)
    world.broker.partitions_of["clicks"] = 1
    facts = fake.facts_of(
        world, f"kafka.topics={fake.TOPIC},clicks", f"kafka.starting_offsets={starting}"
    )
    plan = fake.plan_of(world, facts)
    added = {p.key: (p.restart_offset, p.quarantine_offset) for p in plan.partitions}
    assert added[("clicks", 0)] == (position, position)


def test_a_topic_no_longer_subscribed_is_dropped_and_a_new_one_added(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    world.broker.partitions_of["clicks"] = 1
    plan = fake.plan_of(world, fake.facts_of(world, "kafka.topics=clicks"))
    kinds = {p.key: (p.kind, p.restart_offset) for p in plan.partitions}
    assert kinds == {
        ("clicks", 0): (RestartKind.SUBSCRIBED, -2),
        (fake.TOPIC, 0): (RestartKind.UNSUBSCRIBED, None),
        (fake.TOPIC, 1): (RestartKind.UNSUBSCRIBED, None),
    }
    assert plan.starting_offsets == '{"clicks":{"0":-2}}'
    assert plan.quarantine_starting_offsets == '{"clicks":{"0":-2}}'


def test_the_quarantine_goes_on_where_the_old_one_stopped_else_where_the_old_query_began(
    tmp_path: Path,
) -> None:
    world = fake.make_world(tmp_path)
    facts = fake.facts_of(world, fake.VERSION_2)
    stopped = {(fake.TOPIC, 0): 33, (fake.TOPIC, 1): 31}
    began = {(fake.TOPIC, 0): 0, (fake.TOPIC, 1): 2}
    assert (
        fake.plan_of(
            world, dataclasses.replace(facts, quarantine_offsets=stopped)
        ).quarantine_offsets
        == stopped
    )
    assert (
        fake.plan_of(
            world,
            dataclasses.replace(facts, quarantine_offsets=None, stored_initial_offsets=began),
        ).quarantine_offsets
        == began
    )
    # Nobody recorded either: it starts with the aggregates query.
    bare = dataclasses.replace(facts, quarantine_offsets=None, stored_initial_offsets=None)
    plan = fake.plan_of(world, bare)
    assert plan.quarantine_offsets == plan.restart_offsets


def test_a_new_window_splits_the_generations_in_event_time(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, "window.duration=5 minutes"))
    last_written_end = fake.W - fake.W % (
        10 * fake.MINUTE_MS
    )  # 10:20: the end of the last window written
    assert plan.replay_filter == ReplayFilter(event_time_from_ms=last_written_end)
    assert plan.window_changed
    assert plan.late_before_event_ms == last_written_end


def test_a_split_of_an_earlier_window_change_is_carried_on(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    facts = fake.facts_of(world, fake.VERSION_2)
    floor = fake.BASE_MS + 25 * fake.MINUTE_MS
    earlier = dataclasses.replace(
        fake.plan_of(world, facts), replay_filter=ReplayFilter(event_time_from_ms=floor)
    )
    carried = fake.plan_of(world, dataclasses.replace(facts, old_plan=earlier))
    assert carried.replay_filter == ReplayFilter(
        window_end_after_ms=fake.W, event_time_from_ms=floor
    )
    assert carried.replay_filter.describe() == f"event_time >= {floor} and window.end > {fake.W}"


def test_w_never_drops_below_the_plan_that_started_the_old_generation(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    facts = fake.facts_of(world, fake.VERSION_2)
    higher = fake.W + 7 * fake.MINUTE_MS
    earlier = dataclasses.replace(
        fake.plan_of(world, facts), replay_filter=ReplayFilter(window_end_after_ms=higher)
    )
    plan = fake.plan_of(world, dataclasses.replace(facts, old_plan=earlier))
    assert plan.watermark_ms == higher
    assert any("W is" in note for note in plan.notes)


# The end of the first window after W: a handoff's C.
NEXT_END = fake.W - fake.W % (10 * fake.MINUTE_MS) + 10 * fake.MINUTE_MS


def test_a_handoff_plans_for_c_and_carries_the_request(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    facts = fake.facts_of(world, fake.VERSION_2)
    boundary = NEXT_END
    plan = fake.plan_of(world, facts, handoff_at_ms=boundary)
    assert plan.handoff == Handoff(boundary)
    assert plan.watermark_ms == boundary
    assert plan.replay_filter == ReplayFilter(window_end_after_ms=boundary)
    # Each partition from its first record in a window after C, which is C itself here.
    assert plan.restart_offsets == fake.first_feeding_offsets(world, boundary)
    ordinary = fake.plan_of(world, facts)
    assert ordinary.handoff is None
    assert plan.records_to_replay is not None and ordinary.records_to_replay is not None
    assert plan.records_to_replay < ordinary.records_to_replay


def test_a_handoff_refuses_a_window_change(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    facts = fake.facts_of(world, "window.duration=5 minutes")
    with pytest.raises(UpgradeError, match="a handoff keeps the window"):
        fake.plan_of(
            world,
            facts,
            handoff_at_ms=fake.W - fake.W % (10 * fake.MINUTE_MS) + 10 * fake.MINUTE_MS,
        )


def test_retention_is_checked_before_any_record_is_read(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    world.broker.earliest_of[(fake.TOPIC, 0)] = 25  # offsets 0-24 of partition 0 are gone
    facts = fake.facts_of(world, fake.VERSION_2)
    with pytest.raises(OffsetsOutOfRetentionError, match="needs offset 20, the earliest"):
        batch_level(facts, accept_data_loss=False)
    # Accepted, the scan starts at what is still there: a deleted record cannot be read, so
    # whether it fed an open window is unknown and it counts as lost.
    level = batch_level(facts, accept_data_loss=True)
    request = scan_request(level, facts)
    assert {span.partition: span.start for span in request.replay} == {
        (fake.TOPIC, 0): 25,
        (fake.TOPIC, 1): 20,
    }
    plan = decide(facts, level, advise_upgrade(facts), fake.scanned(world, request))
    assert {p.key: p.lost_records for p in plan.partitions} == {
        (fake.TOPIC, 0): 5,
        (fake.TOPIC, 1): 0,
    }
    assert plan.restart_offsets == {(fake.TOPIC, 0): 25, (fake.TOPIC, 1): 20}


def test_records_waiting_after_the_old_end_are_counted_late_when_every_window_closed(
    tmp_path: Path,
) -> None:
    world = fake.make_world(tmp_path)
    # After the stop: two stragglers whose windows were written (minutes 3 and 12), one of
    # the open window 10:20-10:30 (minute 21), one new (minute 45).
    world.produce([3, 12, 21, 45], partition=0)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2))
    t_min = fake.W - fake.W % (10 * fake.MINUTE_MS)
    late = [t for t in world.records[(fake.TOPIC, 0)][40:] if t < t_min]
    assert plan.late_records == len(late) == 2
    waiting = {p.key: p.waiting_scan for p in plan.partitions if p.waiting_scan is not None}
    assert {key: scan.scanned_records for key, scan in waiting.items()} == {
        (fake.TOPIC, 0): 4,
        (fake.TOPIC, 1): 0,
    }


def test_a_sink_ahead_of_its_checkpoint_is_refused(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    facts = dataclasses.replace(fake.facts_of(world, fake.VERSION_2), sink_last_batch=4)
    with pytest.raises(Exception, match="killed mid-commit"):
        batch_level(facts, accept_data_loss=False)


def test_the_old_generation_record_is_read_from_the_ledger(tmp_path: Path) -> None:
    world = fake.make_world(tmp_path)
    with world.store() as store:
        record = store.generation(fake.PIPELINE, 1)
    assert isinstance(record, GenerationRecord)
    facts = fake.facts_of(world, fake.VERSION_2)
    assert facts.old_signature == record.signature
    assert facts.next_generation == 2
    assert facts.checkpoint.last_committed_batch == 3
