"""The old generation's side of a handoff, on a hand-made world (real checkpoint files and a
real SQLite ledger, no Spark): it sees the request, takes C or refuses it, knows when it
has written every window it owns, retires, and which deployment runs which generation."""

from __future__ import annotations

from pathlib import Path

import pytest

import pyspark_kafka_upgrade._application.run.handoff as handoff
import pyspark_kafka_upgrade.testing._fake_world as fake
from pyspark_kafka_upgrade._application.upgrade.apply import apply_plan, roll_back
from pyspark_kafka_upgrade._core.formats.format_errors import CheckpointError
from pyspark_kafka_upgrade._domain.records.ledger import GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import RollbackRefusedError

# The end of the first window after the world's W (10:24): 10:30.
C = fake.BASE_MS + 30 * fake.MINUTE_MS


@pytest.fixture(autouse=True)
def every_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every poll reads the world: an answer seen, not a throttle, makes a call return None.
    monkeypatch.setattr(handoff, "_EVERY_S", 0.0)
    monkeypatch.setattr(handoff, "_REQUEST_EVERY_S", 0.0)


def handing_over(tmp_path: Path, boundary_ms: int = C) -> tuple[fake.World, UpgradePlan]:
    """Generation 1 ran four batches; a handoff to version 2 at C is planned and applied."""
    world = fake.make_world(tmp_path)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2), handoff_at_ms=boundary_ms)
    with world.store() as store:
        apply_plan(store, plan, sink=world.settings(fake.VERSION_2).sink)
    return world, plan


def take(world: fake.World) -> handoff.Successor:
    """Generation 1's answer, as its run gives it."""
    with world.store() as store:
        answered = handoff.take_handoff(store, world.layout, successor(world))
    assert answered is not None
    return answered


def successor(world: fake.World) -> handoff.Successor:
    with world.store() as store:
        found = handoff.successor_of(store, fake.PIPELINE, 1)
    assert found is not None
    return found


def test_an_applied_handoff_is_asked_once_and_the_old_generation_stays_running(
    tmp_path: Path,
) -> None:
    world, _ = handing_over(tmp_path)
    with world.store() as store:
        assert store.generation(fake.PIPELINE, 1).status is GenerationStatus.RUNNING  # type: ignore[union-attr]
        asked = handoff.HandoffRequested(store, fake.PIPELINE, 1)
        assert asked() == handoff.HANDOFF_REQUESTED
        handoff.take_handoff(store, world.layout, successor(world))
        assert asked() is None


def test_the_old_generation_takes_c_below_its_watermark(tmp_path: Path) -> None:
    world, plan = handing_over(tmp_path)
    answered = take(world).handoff
    assert answered.acknowledged is not None
    assert answered.acknowledged.batch_id == 3
    assert answered.acknowledged.batch_watermark_ms == fake.W
    # No quarantine ran here: the new one starts where the plan says.
    assert answered.acknowledged.quarantine_end_offsets == plan.quarantine_starting_offsets
    # Answered once: asking again keeps the answer.
    assert take(world).handoff == answered


def test_a_watermark_that_reached_c_meanwhile_is_refused(tmp_path: Path) -> None:
    world, _ = handing_over(tmp_path)
    # It ran on between the plan and its answer: minutes 40-49 arrive, W becomes 10:34.
    for partition in range(fake.PARTITIONS):
        world.produce(range(40, 50), partition)
    world.run_batch()
    world.run_batch()
    answered = take(world).handoff
    assert answered.acknowledged is None
    assert answered.refused is not None and "batch 5" in answered.refused
    with world.store() as store, pytest.raises(handoff.HandoffWaitError, match="refused"):
        handoff.wait_for_handoff(store, store.generation(fake.PIPELINE, 2), echo=print)
    # Refused, generation 1 goes on as before: a restart of its code resumes it.
    with world.store() as store:
        assert handoff.generation_to_run(store, world.settings()) == 1
        assert handoff.generation_to_run(store, world.settings(fake.VERSION_2)) == 2


def test_handed_over_once_a_committed_batch_ran_at_c(tmp_path: Path) -> None:
    world, _ = handing_over(tmp_path)
    with world.store() as store:
        handoff.take_handoff(store, world.layout, successor(world))
        done = handoff.HandedOver(store, fake.PIPELINE, world.layout, C)
        assert done() is None
        for partition in range(fake.PARTITIONS):
            world.produce(range(40, 50), partition)
        world.run_batch()  # minutes 40-49, run with the watermark of minute 39: 10:34 >= C
        assert done() == handoff.HANDED_OVER
        handoff.complete_handoff(store, fake.PIPELINE, 1)
        assert store.generation(fake.PIPELINE, 1).status is GenerationStatus.RETIRED  # type: ignore[union-attr]


def test_a_checkpoint_that_cannot_be_read_is_never_taken_for_no_batch(tmp_path: Path) -> None:
    world, _ = handing_over(tmp_path)
    (Path(world.layout.checkpoint) / "offsets" / "3").write_text("v1\n{not json")
    with world.store() as store, pytest.raises(CheckpointError):
        handoff.take_handoff(store, world.layout, successor(world))
    assert successor(world).handoff.pending


def test_a_rollback_is_refused_once_the_old_generation_ran_past_c(tmp_path: Path) -> None:
    world, _ = handing_over(tmp_path)
    with world.store() as store:
        handoff.take_handoff(store, world.layout, successor(world))
    for partition in range(fake.PARTITIONS):
        world.produce(range(40, 50), partition)
    world.run_batch()
    world.run_batch()  # bounded, with W = 10:44: [10:30, 10:40) left its state unwritten
    with world.store() as store:
        live = store.generation(fake.PIPELINE, 2)
        assert live is not None
        with pytest.raises(RollbackRefusedError, match="no longer in its state"):
            roll_back(store, live, successor(world).plan, sink=world.settings().sink)
        handoff.complete_handoff(store, fake.PIPELINE, 1)
        with pytest.raises(RollbackRefusedError, match="retired itself"):
            roll_back(store, live, successor(world).plan, sink=world.settings().sink)


def test_a_handoff_rolled_back_before_the_answer_is_not_answered(tmp_path: Path) -> None:
    world, plan = handing_over(tmp_path)
    asked = successor(world)
    with world.store() as store:
        live = store.generation(fake.PIPELINE, 2)
        assert live is not None
        roll_back(store, live, plan, sink=world.settings().sink)
        # The old run read the request before the rollback, and answers after it.
        assert handoff.take_handoff(store, world.layout, asked) is None
        record = store.generation(fake.PIPELINE, 2)
    assert record is not None and record.status is GenerationStatus.RETIRED
    assert UpgradePlan.from_json(record.plan or {}).handoff == plan.handoff


def test_a_rolled_back_handoff_is_withdrawn(tmp_path: Path) -> None:
    world, plan = handing_over(tmp_path)
    with world.store() as store:
        handoff.take_handoff(store, world.layout, successor(world))
        live = store.generation(fake.PIPELINE, 2)
        assert live is not None
        roll_back(store, live, plan, sink=world.settings().sink)
        assert handoff.HandedOver(store, fake.PIPELINE, world.layout, C)() == (
            handoff.HANDOFF_WITHDRAWN
        )


def test_each_deployment_runs_its_own_generation_during_a_handoff(tmp_path: Path) -> None:
    world, _ = handing_over(tmp_path)
    with world.store() as store:
        assert handoff.generation_to_run(store, world.settings()) == 1
        assert handoff.generation_to_run(store, world.settings(fake.VERSION_2)) == 2
        handoff.take_handoff(store, world.layout, successor(world))
        assert handoff.generation_to_run(store, world.settings()) == 1
        handoff.complete_handoff(store, fake.PIPELINE, 1)
        # Retired: the old code has nothing left to run, and says so (a supervisor
        # restarting its deployment would loop on a refusal that says "upgrade plan").
        with pytest.raises(handoff.HandoffWaitError, match="Stop its deployment"):
            handoff.generation_to_run(store, world.settings())
        assert handoff.generation_to_run(store, world.settings(fake.VERSION_2)) == 2


def test_the_new_generation_waits_for_the_answer_with_a_deadline(tmp_path: Path) -> None:
    world, _ = handing_over(tmp_path)
    lines: list[str] = []
    with world.store() as store:
        record = store.generation(fake.PIPELINE, 2)
        with pytest.raises(handoff.HandoffWaitError, match="did not take the handoff") as late:
            handoff.wait_for_handoff(store, record, echo=lines.append, timeout_s=0.2)
    assert "2025-11-22T10:30:00" in str(late.value)
    assert lines and "waiting for generation 1" in lines[0]
    with world.store() as store:
        handoff.take_handoff(store, world.layout, successor(world))
        waited = handoff.wait_for_handoff(store, record, echo=lines.append, timeout_s=5)
    assert waited is not None and waited.plan is not None
    assert UpgradePlan.from_json(waited.plan).handoff.acknowledged is not None  # type: ignore[union-attr]
