"""`upgrade plan --out`, `show` and `apply PLAN` through the CLI, on a world without Spark or
Kafka: a reviewed plan is applied exactly, and every plan file that cannot be is refused with
one line, exit code 2, and nothing changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pyspark_kafka_upgrade.testing._fake_world as fake
from pyspark_kafka_upgrade._adapters.storage.run_lock import RunLock
from pyspark_kafka_upgrade._application.upgrade.commands import (
    APPLY_STEPS,
    apply_command,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    GenerationStatus,
)
from pyspark_kafka_upgrade._domain.records.plan import (
    FORMAT_VERSION,
    UpgradePlan,
)
from pyspark_kafka_upgrade._domain.records.record_errors import (
    UpgradeError,
)
from pyspark_kafka_upgrade._domain.values.words import when
from support.example import main


class Crash(BaseException):
    """Stands for the process being killed: no `except Exception` stops it."""


def cli(world: fake.World, *arguments: str, settings: tuple[str, ...] = (fake.VERSION_2,)) -> int:
    options = [f"--set={option}" for option in world.overrides(*settings)]
    return main([*arguments[:2], *options, *arguments[2:]])


def plan_file(world: fake.World, capsys: pytest.CaptureFixture[str]) -> Path:
    path = world.root / "upgrade.json"
    assert cli(world, "upgrade", "plan", "--out", str(path)) == 0
    capsys.readouterr()
    return path


def assert_applied_exactly(world: fake.World, reviewed: UpgradePlan) -> None:
    """Generation 1 retired, generation 2 planned from exactly ``reviewed``, stamped applied."""
    with world.store() as store:
        generations = store.generations(fake.PIPELINE)
    assert [(g.generation, g.status) for g in generations] == [
        (1, GenerationStatus.RETIRED),
        (2, GenerationStatus.PLANNED),
    ]
    recorded = UpgradePlan.from_json(generations[1].plan or {})
    assert recorded.applied_at_ms is not None
    assert recorded.as_reviewed() == reviewed
    assert reviewed.to_signature is not None
    assert generations[1].signature == reviewed.to_signature.to_json()


def refused(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_a_reviewed_plan_is_applied_exactly(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = plan_file(world, capsys)
    written = UpgradePlan.from_json(json.loads(path.read_text()))
    assert written.restart_offsets == {(fake.TOPIC, 0): 20, (fake.TOPIC, 1): 20}

    assert cli(world, "upgrade", "show", str(path)) == 0
    shown = capsys.readouterr().out
    assert "restarts at 20: offset 20 holds the first record" in shown
    assert f"upgrade apply {path}" in shown

    assert cli(world, "upgrade", "apply", str(path)) == 0
    applied = capsys.readouterr().out
    assert "generation 1 retired; generation 2 planned and applied." in applied
    # The filter's number, as before, then W with its time.
    assert f"  filter      window.end > {fake.W} (W = {when(fake.W)})\n" in applied
    assert_applied_exactly(world, written)


def test_plan_out_writes_nothing_when_no_upgrade_is_needed(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = world.root / "upgrade.json"
    assert cli(world, "upgrade", "plan", "--out", str(path), settings=()) == 0
    assert "Nothing to plan: no file written." in capsys.readouterr().out
    assert not path.exists()


def stale_by_a_new_batch(world: fake.World) -> None:
    world.produce(range(40, 50), partition=0)
    world.produce(range(40, 50), partition=1)
    world.run_batch()


@pytest.mark.parametrize(
    ("edit", "settings", "complaint"),
    [
        (stale_by_a_new_batch, (fake.VERSION_2,), "committed up to batch 4 since the plan"),
        (
            lambda world: None,
            (fake.VERSION_2, "sink.format=orc"),
            "sink.format: 'parquet' -> 'orc'",
        ),
        (
            lambda world: world.broker.earliest_of.update({(fake.TOPIC, 0): 21}),
            (fake.VERSION_2,),
            "offsets 20-20 that the plan replays were deleted by retention",
        ),
        (
            lambda world: world.broker.partitions_of.update({fake.TOPIC: 3}),
            (fake.VERSION_2,),
            "the subscribed partitions changed",
        ),
    ],
    ids=["a-batch-committed", "a-setting-changed", "retention", "a-partition-added"],
)
def test_a_plan_the_world_moved_away_from_is_refused_naming_what_moved(
    world: fake.World,
    capsys: pytest.CaptureFixture[str],
    edit: Any,
    settings: tuple[str, ...],
    complaint: str,
) -> None:
    path = plan_file(world, capsys)
    edit(world)
    before = world.snapshot()
    assert cli(world, "upgrade", "apply", str(path), settings=settings) == 2
    line = refused(capsys)
    assert "is stale, nothing was applied" in line and complaint in line, line
    assert world.snapshot() == before


def corrupt(path: Path) -> None:
    path.write_text(path.read_text()[:200])


def other_pipeline(path: Path) -> None:
    document = json.loads(path.read_text())
    path.write_text(json.dumps({**document, "pipeline": "checkout-events"}))


def newer(path: Path) -> None:
    document = json.loads(path.read_text())
    path.write_text(json.dumps({**document, "format_version": FORMAT_VERSION + 1}))


def not_a_plan(path: Path) -> None:
    path.write_text('{"pipeline": "page-views-test"}')


@pytest.mark.parametrize(
    ("damage", "complaint"),
    [
        (corrupt, "is not an upgrade plan: not JSON"),
        (other_pipeline, "is a plan for pipeline 'checkout-events'"),
        (newer, f"format version {FORMAT_VERSION + 1}, newer than"),
        (not_a_plan, "has no field 'format_version'"),
        (lambda path: path.unlink(), "no plan file at"),
    ],
    ids=["corrupt", "other-pipeline", "newer-format", "not-a-plan", "missing"],
)
def test_a_plan_file_that_is_not_this_pipelines_plan_is_refused(
    world: fake.World, capsys: pytest.CaptureFixture[str], damage: Any, complaint: str
) -> None:
    path = plan_file(world, capsys)
    damage(path)
    before = world.snapshot()
    assert cli(world, "upgrade", "apply", str(path)) == 2
    line = refused(capsys)
    assert complaint in line and str(path) in line, line
    assert world.snapshot() == before


def test_a_plan_applied_already_is_refused(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = plan_file(world, capsys)
    assert cli(world, "upgrade", "apply", str(path)) == 0
    capsys.readouterr()
    before = world.snapshot()
    assert cli(world, "upgrade", "apply", str(path)) == 2
    assert "is applied already: generation 2 is planned; `run` starts it" in refused(capsys)
    assert world.snapshot() == before


def test_a_plan_rolled_back_is_refused(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = plan_file(world, capsys)
    assert cli(world, "upgrade", "apply", str(path)) == 0
    assert cli(world, "upgrade", "rollback") == 0
    capsys.readouterr()
    assert cli(world, "upgrade", "apply", str(path)) == 2
    assert "then generation 2 was rolled back" in refused(capsys)


@pytest.mark.parametrize("crash_after", APPLY_STEPS)
def test_an_apply_killed_after_any_step_finishes_with_the_same_file(
    world: fake.World, capsys: pytest.CaptureFixture[str], crash_after: str
) -> None:
    path = plan_file(world, capsys)

    def crash(step: str) -> None:
        if step == crash_after:
            raise Crash(step)

    with pytest.raises(Crash):
        apply_command(
            world.settings(fake.VERSION_2), accept_data_loss=False, plan_file=path, after_step=crash
        )
    expected = 2 if crash_after == APPLY_STEPS[-1] else 0
    assert cli(world, "upgrade", "apply", str(path)) == expected
    assert_applied_exactly(world, UpgradePlan.from_json(json.loads(path.read_text())))


def test_apply_without_a_file_prints_the_plan_then_applies_it(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(world, "upgrade", "apply") == 0
    out = capsys.readouterr().out
    plan_at, applied_at = out.index("restarts at 20"), out.index("planned and applied")
    assert plan_at < applied_at


def test_an_apply_does_not_bring_back_a_plan_rolled_back_meanwhile(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = plan_file(world, capsys)

    def rolled_back_now(step: str) -> None:
        # A rollback holds generation 2's lock, not generation 1's: it can retire the plan
        # while this apply is between its steps.
        if step == "check_directories":
            with world.store() as store:
                store.set_generation_status(
                    fake.PIPELINE, 2, GenerationStatus.RETIRED, at_ms=fake.BASE_MS
                )

    with pytest.raises(UpgradeError, match="was rolled back while this apply ran"):
        apply_command(
            world.settings(fake.VERSION_2),
            accept_data_loss=False,
            plan_file=path,
            after_step=rolled_back_now,
        )
    with world.store() as store:
        recorded = store.generation(fake.PIPELINE, 2)
    assert recorded is not None and recorded.status is GenerationStatus.RETIRED
    assert UpgradePlan.from_json(recorded.plan or {}).applied_at_ms is None


def test_plan_out_with_a_plan_pending_writes_that_plan(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    first = plan_file(world, capsys)

    def crash(step: str) -> None:
        if step == "record_plan":
            raise Crash(step)

    with pytest.raises(Crash):
        apply_command(
            world.settings(fake.VERSION_2),
            accept_data_loss=False,
            plan_file=first,
            after_step=crash,
        )
    again = world.root / "pending.json"
    assert cli(world, "upgrade", "plan", "--out", str(again)) == 0
    assert f"That plan is written to {again}." in capsys.readouterr().out
    # The same plan (the ledger keeps JSON with sorted keys, so compared as plans).
    assert UpgradePlan.from_json(json.loads(again.read_text())) == UpgradePlan.from_json(
        json.loads(first.read_text())
    )
    assert cli(world, "upgrade", "apply", str(again)) == 0


# -- A handoff plan: reviewed while the old generation runs, applied while it runs on -------

# Two window ends after W (10:24): generation 1 reads what it has once more meanwhile.
HANDOFF_C = fake.BASE_MS + 40 * fake.MINUTE_MS


def handoff_file(world: fake.World, capsys: pytest.CaptureFixture[str]) -> Path:
    path = world.root / "handoff.json"
    at = "2025-11-22T10:40:00Z"
    assert cli(world, "upgrade", "plan", "--handoff-at", at, "--out", str(path)) == 0
    shown = capsys.readouterr().out
    assert f"A handoff at C = {at}: generation 1 keeps running" in shown, shown
    return path


def test_a_reviewed_handoff_is_applied_while_the_old_generation_runs_on(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = handoff_file(world, capsys)
    # Generation 1 commits a batch meanwhile, run with W = 10:34, below C: an ordinary plan
    # would be stale, a handoff's is not.
    world.run_batch()
    assert cli(world, "upgrade", "apply", str(path)) == 0
    applied = capsys.readouterr().out
    assert "a handoff at C = 2025-11-22T10:40:00Z" in applied, applied
    with world.store() as store:
        generations = store.generations(fake.PIPELINE)
    assert [(g.generation, g.status) for g in generations] == [
        (1, GenerationStatus.RUNNING),
        (2, GenerationStatus.PLANNED),
    ]
    recorded = UpgradePlan.from_json(generations[1].plan or {})
    assert recorded.handoff is not None and recorded.handoff.pending
    assert recorded.watermark_ms == HANDOFF_C


def test_a_reviewed_handoff_whose_c_the_watermark_reached_is_stale(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = handoff_file(world, capsys)
    for partition in range(fake.PARTITIONS):
        world.produce(range(40, 50), partition)
    world.run_batch()
    world.run_batch()  # runs with the watermark of minute 49: 10:44, past C
    before = world.snapshot()
    assert cli(world, "upgrade", "apply", str(path)) == 2
    line = refused(capsys)
    assert "is stale, nothing was applied" in line and "already reached the handoff" in line, line
    assert world.snapshot() == before


def test_no_new_plan_while_a_handoff_is_under_way(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = handoff_file(world, capsys)
    assert cli(world, "upgrade", "apply", str(path)) == 0
    capsys.readouterr()
    with world.store() as store:  # its run started, beside generation 1's
        store.set_generation_status(fake.PIPELINE, 2, GenerationStatus.RUNNING, at_ms=1)
    before = world.snapshot()
    third = ('aggregation.metrics={"views": "count(*)", "top": "max(user_id)"}',)
    assert cli(world, "upgrade", "plan", settings=third) in (2, 3)
    line = refused(capsys)
    assert "generation 1 is still handing over to generation 2" in line, line
    assert world.snapshot() == before


def test_a_handoff_rolls_back_only_with_the_old_generation_stopped(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    path = handoff_file(world, capsys)
    assert cli(world, "upgrade", "apply", str(path)) == 0
    capsys.readouterr()
    # Generation 1's run holds its lock: running, it could take C or run past it meanwhile.
    with RunLock(world.layout.run_lock, purpose="run"):
        assert cli(world, "upgrade", "rollback") != 0
        capsys.readouterr()
    with world.store() as store:
        assert store.generation(fake.PIPELINE, 2).status is GenerationStatus.PLANNED  # type: ignore[union-attr]
    assert cli(world, "upgrade", "rollback") == 0
    with world.store() as store:
        assert store.generation(fake.PIPELINE, 2).status is GenerationStatus.RETIRED  # type: ignore[union-attr]
        assert store.generation(fake.PIPELINE, 1).status is GenerationStatus.RUNNING  # type: ignore[union-attr]
