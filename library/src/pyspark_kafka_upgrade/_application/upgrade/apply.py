"""Apply a plan in idempotent steps, each durable before the next; undo one not yet run.

    1. record the plan as generation N+1, status "planned"    (record_plan)
    2. retire generation N; its directories stay untouched    (retire_old)
    3. check generation N+1's directories hold no commit       (check_directories)
    4. mark the plan applied                                   (mark_applied)

The caller holds generation N's run lock. A run killed at any point and started again with
the same plan finishes the job: each step checks whether it is done before doing it.
`run` then starts generation N+1 from the plan and marks it consumed after its first commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pyspark_kafka_upgrade._adapters.checkpoint.reader import newest_batch
from pyspark_kafka_upgrade._application.upgrade.lookup import check_fresh, committed_directories
from pyspark_kafka_upgrade._core.planner.plan_words import writes_to
from pyspark_kafka_upgrade._core.settings.sections import SinkSettings
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord, GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import RollbackRefusedError, UpgradeError
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import now_ms
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.words import when

APPLY_STEPS = ("record_plan", "retire_old", "check_directories", "mark_applied")


def apply_plan(
    store: OffsetStore,
    plan: UpgradePlan,
    *,
    sink: SinkSettings,
    after_step: Callable[[str], None] = lambda step: None,
) -> str:
    """Carry out ``plan``'s steps that are not done yet; what was done, for the user.
    ``sink``: the settings' ``[sink]``, whose sink says whether the new generation's output
    holds a commit."""
    layout = GenerationLayout(plan.root, plan.to_generation)
    recorded = store.generation(plan.pipeline, plan.to_generation)
    if recorded is None:
        if plan.to_signature is None:
            raise UpgradeError(
                f"the plan for generation {plan.to_generation} was made by an earlier version "
                "of the pipeline and names no signature: make a new plan"
            )
        check_fresh(layout, sink)
        now = now_ms()
        recorded = GenerationRecord(
            pipeline=plan.pipeline,
            generation=plan.to_generation,
            status=GenerationStatus.PLANNED,
            signature=plan.to_signature.to_json(),
            plan=plan.to_json(),
            created_at_ms=now,
            updated_at_ms=now,
        )
        store.record_generation(recorded)
    after_step("record_plan")
    old = store.generation(plan.pipeline, plan.from_generation)
    if old is None:
        raise UpgradeError(f"generation {plan.from_generation} is not in the ledger")
    # A handoff leaves it running: its own run retires it once it wrote the windows to C.
    if old.status is not GenerationStatus.RETIRED and plan.handoff is None:
        store.set_generation_status(
            plan.pipeline, plan.from_generation, GenerationStatus.RETIRED, at_ms=now_ms()
        )
    after_step("retire_old")
    check_fresh(layout, sink)
    after_step("check_directories")
    # Read again: a rollback holds the new generation's lock, not the old one's, so it may
    # have retired the plan since; writing the record read above would bring it back.
    current = store.generation(plan.pipeline, plan.to_generation)
    if current is None or current.status is GenerationStatus.RETIRED:
        raise UpgradeError(
            f"generation {plan.to_generation} was rolled back while this apply ran; make a new plan"
        )
    now = now_ms()
    store.record_generation(replace(current, plan=plan.applied(now).to_json(), updated_at_ms=now))
    after_step("mark_applied")
    if plan.handoff is not None:
        return _handoff_applied(plan, layout, sink)
    return (
        f"generation {plan.from_generation} retired; generation {plan.to_generation} planned "
        "and applied.\n"
        f"  starts at   {plan.starting_offsets}\n"
        f"  filter      {plan.replay_filter.explain()}\n"
        f"  output      {writes_to(plan, layout)}\n"
        + (f"  table name  {sink.table_name}\n" if sink.table_name else "")
        + f"  checkpoint  {layout.checkpoint}\n"
        "Start it with `run`."
    )


def _refuse_handed_over(store: OffsetStore, plan: UpgradePlan) -> None:
    """A handoff rolls back only while the old generation still holds every window after C:
    its bound drops them on the way out, so once a batch of its ran with a watermark past
    C, the windows between are gone from its state, written by nobody."""
    handoff = plan.handoff
    if handoff is None or handoff.acknowledged is None:
        return
    old = GenerationLayout(plan.root, plan.from_generation)
    record = store.generation(plan.pipeline, plan.from_generation)
    if record is not None and record.status is GenerationStatus.RETIRED:
        raise RollbackRefusedError(
            f"generation {plan.from_generation} handed over at C = "
            f"{when(handoff.boundary_ms)} and retired itself: generation {plan.to_generation} "
            "alone writes the windows after C; plan a new upgrade instead"
        )
    newest = newest_batch(old.checkpoint)
    watermark = None if newest is None else newest[1]
    if watermark is not None and watermark > handoff.boundary_ms:
        raise RollbackRefusedError(
            f"generation {plan.from_generation} already ran a batch past C = "
            f"{when(handoff.boundary_ms)} (watermark {when(watermark)}) bounded to C: the "
            "windows after C that it closed are no longer in its state. Let generation "
            f"{plan.to_generation} run, or plan a new upgrade"
        )


def _handoff_applied(plan: UpgradePlan, layout: GenerationLayout, sink: SinkSettings) -> str:
    assert plan.handoff is not None
    boundary = when(plan.handoff.boundary_ms)
    return (
        f"generation {plan.to_generation} planned and applied: a handoff at C = {boundary}.\n"
        f"  generation {plan.from_generation} takes C between two batches in its running "
        "`run` (or when it starts), writes every window ending at or before C, then stops and "
        "retires itself\n"
        f"  generation {plan.to_generation} starts at {plan.starting_offsets} and writes the "
        "windows after C\n"
        f"  filter      {plan.replay_filter.explain()}\n"
        f"  output      {writes_to(plan, layout)}\n"
        + (f"  table name  {sink.table_name}\n" if sink.table_name else "")
        + f"  checkpoint  {layout.checkpoint}\n"
        f"Start it with `run` of the new version, beside generation {plan.from_generation}'s: "
        "it waits until the old one took C."
    )


def roll_back(
    store: OffsetStore, live: GenerationRecord, plan: UpgradePlan, *, sink: SinkSettings
) -> str:
    """Make the generation ``plan`` started from current again, if ``live`` wrote nothing
    (in its checkpoints, or in the sinks of the settings' ``[sink]``).

    The caller holds ``live``'s run lock, so no run can start writing meanwhile.
    """
    _refuse_handed_over(store, plan)
    layout = GenerationLayout(plan.root, live.generation)
    written = committed_directories(layout, sink)
    if written:
        raise RollbackRefusedError(
            f"generation {live.generation} has committed output ({', '.join(written)}): "
            "it is live, so it cannot be rolled back; plan a new upgrade instead"
        )
    now = now_ms()
    store.set_generation_status(
        plan.pipeline, plan.from_generation, GenerationStatus.RUNNING, at_ms=now
    )
    store.record_generation(replace(live, status=GenerationStatus.RETIRED, updated_at_ms=now))
    return (
        f"generation {live.generation} retired unused; generation {plan.from_generation} is "
        "current again. Its directories were never written and stay unused."
    )
