"""Use cases: plan an upgrade onto a new checkpoint, review it, apply exactly it, roll it back.

    upgrade plan --out PLAN    gather → decide → render; the plan written to PLAN for review
    upgrade show PLAN          the plan file in words, changing nothing
    ... --plot FILE            plan and show also draw the plan (``picture``) to a PNG or SVG
    upgrade apply PLAN         gather again; refuse if anything the plan rests on moved;
                               else apply exactly PLAN (``apply.APPLY_STEPS``)
    upgrade apply              plan and apply in one step, printing the plan first
    upgrade rollback           back to the generation before, while the new one wrote nothing

None of them starts Spark unless the ledger lives on a Hadoop filesystem (the filesystem
store writes through the JVM): checkpoints are read with pyarrow, Kafka with confluent-kafka,
event times with the parser's pure-Python mirror, and the signature from a table of Spark's
type rules. The pipeline is down while these run, so every second here is downtime.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._adapters.storage.run_lock import RunLock
from pyspark_kafka_upgrade._application.upgrade.apply import APPLY_STEPS, apply_plan, roll_back
from pyspark_kafka_upgrade._application.upgrade.gather import (
    gather,
    next_generation,
    source_options,
)
from pyspark_kafka_upgrade._application.upgrade.lookup import (
    live_generation,
    open_ledger,
    refuse_during_handoff,
    refuse_if_running,
)
from pyspark_kafka_upgrade._application.upgrade.plan_file import read_plan_file, write_plan_file
from pyspark_kafka_upgrade._core.planner.decide import (
    advise_upgrade,
    batch_level,
    decide,
    scan_request,
)
from pyspark_kafka_upgrade._core.planner.plan_words import render_advice, render_json, render_plan
from pyspark_kafka_upgrade._core.planner.staleness import level_moved, what_moved
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.advice import Advice, Verdict
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord, GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import (
    PlanAlreadyAppliedError,
    PlanFileAppliedError,
    PlanMismatchError,
    RollbackRefusedError,
    StalePlanError,
)
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pyspark_kafka_upgrade._application.upgrade.event_scan import Progress

__all__ = [
    "APPLY_STEPS",
    "apply_command",
    "make_plan",
    "plan_command",
    "rollback_command",
    "show_command",
]

# Only a ledger on a Hadoop filesystem asks for a session; it reads no Kafka, so no jars.
Session = Callable[[], "SparkSession"]


def _session(settings: Settings, given: Session | None) -> Session:
    """Spark for a ledger on a Hadoop filesystem, imported and started only when it asks:
    these commands are the pipeline's downtime, and every other ledger needs no JVM."""

    started: list[Session] = []

    def start() -> SparkSession:
        if not started:
            from pyspark_kafka_upgrade._adapters.spark.session import command_session

            started.append(command_session(settings, purpose="upgrade", given=given))
        return started[0]()

    return start


# The picture's modules are imported only when a picture is asked for (see make_plan).
def _check_plot_path(plot: Path) -> None:
    from pyspark_kafka_upgrade._application.upgrade.picture import check_plot_path

    check_plot_path(plot)


def _draw_plan(store: OffsetStore, plan: UpgradePlan, plot: Path) -> str:
    from pyspark_kafka_upgrade._application.upgrade.picture import draw_plan

    return draw_plan(store, plan, plot)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def make_plan(
    settings: Settings,
    store: OffsetStore,
    old: GenerationRecord,
    *,
    accept_data_loss: bool,
    scan: bool,
    progress: Progress = _stderr,
    handoff_at_ms: int | None = None,
) -> UpgradePlan | Advice:
    """The plan of an upgrade from ``old``, or the advice alone when none is needed."""
    facts = gather(settings, store, old, latest=scan)
    advice = advise_upgrade(facts)
    if advice.verdict is not Verdict.NEEDS_NEW_CHECKPOINT:
        return advice
    level = batch_level(facts, accept_data_loss=accept_data_loss, handoff_at_ms=handoff_at_ms)
    if not scan:
        return decide(facts, level, advice, None)
    # Imported here: the scan's modules (numpy, orjson, its Kafka reader) are a tenth of a
    # second of downtime that `apply` of a reviewed plan, which scans nothing, does not pay.
    from pyspark_kafka_upgrade._application.upgrade.event_scan import EventSource, run_scans

    source = EventSource(
        options=source_options(settings),
        events=settings.project.events,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )
    results = run_scans(scan_request(level, facts), source, progress=progress)
    return decide(facts, level, advice, results)


def plan_command(
    settings: Settings,
    *,
    as_json: bool,
    accept_data_loss: bool,
    scan: bool = True,
    out: Path | None = None,
    plot: Path | None = None,
    spark: Session | None = None,
    progress: Progress = _stderr,
    handoff_at_ms: int | None = None,
) -> str:
    """Say whether the change needs a new checkpoint and, if so, the plan; write it to ``out``
    and its picture to ``plot``. ``handoff_at_ms``: plan a handoff at that C, while the old
    generation runs."""
    if plot is not None:
        _check_plot_path(plot)  # before the scans: a bad name should not cost the downtime
    with open_ledger(settings, _session(settings, spark)) as store:
        old = live_generation(store, settings.pipeline.name, settings.pipeline.root)
        if old.status is GenerationStatus.PLANNED and old.plan is not None:
            recorded = UpgradePlan.from_json(old.plan)
            state = "applied; `run` starts it" if recorded.applied_at_ms else "not applied yet"
            shown = render_json(recorded) if as_json else render_plan(recorded)
            written = ""
            if out is not None:
                # The plan the ledger holds, for review: `apply` with it finishes an apply
                # that stopped half way, or says it is applied.
                write_plan_file(out, recorded.as_reviewed())
                written = f"\nThat plan is written to {out}."
            if plot is not None:
                written += "\n" + _draw_plan(store, recorded, plot)
            return f"generation {old.generation} is already planned ({state}):\n{shown}{written}"
        refuse_during_handoff(store, old)
        if handoff_at_ms is None:
            refuse_if_running(settings, old, "upgrade plan")
        outcome = make_plan(
            settings,
            store,
            old,
            accept_data_loss=accept_data_loss,
            scan=scan,
            progress=progress,
            handoff_at_ms=handoff_at_ms,
        )
        if isinstance(outcome, Advice):
            shown = render_advice(outcome)
            asked = [what for what, path in (("file", out), ("picture", plot)) if path is not None]
            return shown + (f"\nNothing to plan: no {' or '.join(asked)} written." if asked else "")
        if out is not None:
            # First: the plan cost the scans' downtime, and a picture must not lose it.
            write_plan_file(out, outcome)
        drawn = "" if plot is None else _draw_plan(store, outcome, plot)
    if as_json:
        return render_json(outcome)
    drawn = f"\n{drawn}" if drawn else ""
    shown = render_plan(outcome) + _table_name(settings)
    if out is None:
        return f"{shown}{drawn}\nApply it with `upgrade apply`, then `run`."
    return (
        f"{shown}\n\nPlan written to {out}. Review it (`upgrade show {out}`), "
        f"then apply exactly it with `upgrade apply {out}` and start it with `run`.{drawn}"
    )


def show_command(
    settings: Settings,
    plan_file: Path,
    *,
    as_json: bool,
    plot: Path | None = None,
    spark: Session | None = None,
) -> str:
    """A plan file in words (or its JSON); changes nothing. Only ``plot`` reads more: the
    old generation's batches from the ledger, to draw them."""
    plan = read_plan_file(plan_file)
    drawn = ""
    if plot is not None:
        _check_plot_path(plot)
        _refuse_other_pipeline(settings, plan, plan_file)  # its batches are in its own ledger
        session = _session(settings, spark)
        with open_ledger(settings, session) as store:
            drawn = "\n" + _draw_plan(store, plan, plot)
    if as_json:
        return render_json(plan)
    return (
        f"Plan {plan_file}: pipeline {plan.pipeline!r}, generation {plan.from_generation} -> "
        f"{plan.to_generation}.\n\n{render_plan(plan)}\n"
        f"Apply exactly this plan with `upgrade apply {plan_file}`, then `run`.{drawn}"
    )


def apply_command(
    settings: Settings,
    *,
    accept_data_loss: bool,
    plan_file: Path | None = None,
    scan: bool = True,
    spark: Session | None = None,
    after_step: Callable[[str], None] = lambda step: None,
    progress: Progress = _stderr,
    handoff_at_ms: int | None = None,
) -> str:
    """Apply ``plan_file`` exactly, or plan and apply in one step; ``after_step`` lets tests
    crash the command between steps. ``handoff_at_ms``: plan and apply a handoff at that C,
    while the old generation runs (its run takes C)."""
    with open_ledger(settings, _session(settings, spark)) as store:
        if plan_file is not None:
            return _apply_reviewed(settings, store, plan_file, after_step)
        live = live_generation(store, settings.pipeline.name, settings.pipeline.root)
        if live.status is GenerationStatus.PLANNED and live.plan is not None:
            # A crashed apply left it planned: finish that plan, whatever the settings now.
            recorded = UpgradePlan.from_json(live.plan)
            if recorded.applied_at_ms is not None:
                raise PlanAlreadyAppliedError(
                    f"generation {live.generation} of {live.pipeline!r} is already planned and "
                    "applied: `run` starts it (or `upgrade rollback` returns to generation "
                    f"{recorded.from_generation})"
                )
            # A handoff's old generation runs on, its lock held: the new one's instead.
            locked = recorded.from_generation if recorded.handoff is None else live.generation
            with RunLock(_lock_of(settings, locked), purpose="upgrade apply"):
                return apply_plan(store, recorded, sink=settings.sink, after_step=after_step)
        refuse_during_handoff(store, live)
        # A handoff leaves the old generation running: the new one's lock keeps its own run
        # from starting half way through.
        locked = live.generation if handoff_at_ms is None else next_generation(store, live.pipeline)
        with RunLock(_lock_of(settings, locked), purpose="upgrade apply"):
            outcome = make_plan(
                settings,
                store,
                live,
                accept_data_loss=accept_data_loss,
                scan=scan,
                progress=progress,
                handoff_at_ms=handoff_at_ms,
            )
            if isinstance(outcome, Advice):
                return "Nothing to apply. " + " ".join(outcome.sentences())
            rendered = render_plan(outcome) + _table_name(settings)
            applied = apply_plan(store, outcome, sink=settings.sink, after_step=after_step)
            return f"{rendered}\n\n{applied}"


def _apply_reviewed(
    settings: Settings,
    store: OffsetStore,
    plan_file: Path,
    after_step: Callable[[str], None],
) -> str:
    """Apply the plan in ``plan_file`` exactly as reviewed, or refuse and say what moved."""
    plan = read_plan_file(plan_file)
    _refuse_other_pipeline(settings, plan, plan_file)
    old = store.generation(plan.pipeline, plan.from_generation)
    if old is None:
        raise StalePlanError(
            f"{plan_file} is stale: generation {plan.from_generation} is not in the ledger"
        )
    # A handoff leaves the old generation running, its lock held: the new one's keeps its
    # own run from starting half way through.
    locked = plan.from_generation if plan.handoff is None else plan.to_generation
    with RunLock(_lock_of(settings, locked), purpose="upgrade apply"):
        # Under the lock, so that no other apply or run of the old generation moves
        # anything between these checks and the steps.
        resumed = _recorded_already(store, plan, plan_file)
        live = live_generation(store, plan.pipeline, settings.pipeline.root)
        if not resumed and live.generation != plan.from_generation:
            raise StalePlanError(
                f"{plan_file} is stale: the current generation is {live.generation}, the plan "
                f"moves on from generation {plan.from_generation}; make a new plan"
            )
        facts = gather(
            settings, store, old, latest=False, next_number=plan.to_generation if resumed else None
        )
        moved = what_moved(plan, facts)
        if not moved:
            # W and the replay filter as the facts give them now: the old generation's own
            # plan raises W, and a sink ahead of its checkpoint is refused here too (not for a
            # handoff, whose old generation commits to its table ahead of its checkpoint).
            try:
                boundary = None if plan.handoff is None else plan.handoff.boundary_ms
                level = batch_level(facts, accept_data_loss=True, handoff_at_ms=boundary)
                moved = level_moved(plan, level)
            except PipelineError as error:
                moved = [str(error)]
        if moved:
            raise StalePlanError(
                f"{plan_file} is stale, nothing was applied: "
                + "; ".join(moved)
                + ". Make a new plan with `upgrade plan --out`"
            )
        return apply_plan(store, plan, sink=settings.sink, after_step=after_step)


def _table_name(settings: Settings) -> str:
    """The catalog name readers find the table by, when the settings give one: the plan
    itself names the location only."""
    name = settings.sink.table_name
    return f"\nThe table is registered as {name} (sink.table_name)." if name else ""


def _refuse_other_pipeline(settings: Settings, plan: UpgradePlan, plan_file: Path) -> None:
    root = absolute_uri(settings.pipeline.root)
    if (plan.pipeline, plan.root) != (settings.pipeline.name, root):
        raise PlanMismatchError(
            f"{plan_file} is a plan for pipeline {plan.pipeline!r} at {plan.root}; the settings "
            f"name pipeline {settings.pipeline.name!r} at {root}"
        )


def _recorded_already(store: OffsetStore, plan: UpgradePlan, plan_file: Path) -> bool:
    """Whether an earlier apply of this very plan recorded its generation (and stopped);
    refuses a plan applied to the end, rolled back, or whose number another plan took."""
    recorded = store.generation(plan.pipeline, plan.to_generation)
    if recorded is None:
        return False
    stamped = None if recorded.plan is None else UpgradePlan.from_json(recorded.plan)
    if stamped is None or stamped.as_reviewed() != plan.as_reviewed():
        raise StalePlanError(
            f"{plan_file} is stale: generation {plan.to_generation} was recorded by another plan "
            "since; make a new plan"
        )
    if recorded.status is GenerationStatus.RETIRED:
        raise PlanFileAppliedError(
            f"{plan_file} was applied, then generation {plan.to_generation} was rolled back or "
            "retired; make a new plan"
        )
    if stamped.applied_at_ms is not None:
        consumed = " and has run" if stamped.consumed_at_ms is not None else "; `run` starts it"
        raise PlanFileAppliedError(
            f"{plan_file} is applied already: generation {plan.to_generation} is planned{consumed}"
        )
    return True


def rollback_command(settings: Settings, *, spark: Session | None = None) -> str:
    """Go back to the previous generation, if the new one has not committed a batch."""
    with open_ledger(settings, _session(settings, spark)) as store:
        live = live_generation(store, settings.pipeline.name, settings.pipeline.root)
        if live.plan is None:
            raise RollbackRefusedError(
                f"generation {live.generation} of {live.pipeline!r} did not start from a plan; "
                "there is nothing to roll back"
            )
        plan = UpgradePlan.from_json(live.plan)
        with ExitStack() as locks:
            locks.enter_context(
                RunLock(_lock_of(settings, live.generation), purpose="upgrade rollback")
            )
            if plan.handoff is not None:
                # A handoff's old generation must be stopped too: running, it may take C or
                # run past it between these checks and the writes.
                locks.enter_context(
                    RunLock(_lock_of(settings, plan.from_generation), purpose="upgrade rollback")
                )
            # Read again under the locks: the old generation may have answered meanwhile.
            now = store.generation(live.pipeline, live.generation) or live
            plan = plan if now.plan is None else UpgradePlan.from_json(now.plan)
            return roll_back(store, now, plan, sink=settings.sink)


def _lock_of(settings: Settings, generation: int) -> str:
    return GenerationLayout(absolute_uri(settings.pipeline.root), generation).run_lock
