"""Use cases: plan an upgrade onto a new checkpoint, apply it, roll it back.

The old generation's checkpoint decides what committed; the ledger adds each batch's event
times. The plan says where each partition restarts so that every window still open at W
(the watermark of the last committed batch) is rebuilt, and the new generation drops
(event, window) pairs whose window ended at or before W, which generation N already wrote.

`apply` is a sequence of idempotent steps, each one durable before the next begins, so a
run killed at any point and started again finishes the job:

  1. hold the old generation's run lock (no run may hold it),
  2. record the plan as generation N+1, status "planned",
  3. retire generation N (its directories stay where they are, untouched),
  4. check generation N+1's directories hold no checkpoint,
  5. mark the plan applied.

`run` then starts generation N+1 from the plan and marks it consumed after its first commit.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from pyspark.sql import SparkSession

from .. import planner
from ..advisor import Advice, Verdict, advise, max_watermark_delay_ms
from ..checkpoint.errors import CheckpointError, NotACheckpointError
from ..checkpoint.reader import CheckpointState, read_checkpoint, read_sink_log
from ..errors import PipelineError
from ..layout import GenerationLayout
from ..ledger.opening import ledger_exists, open_store
from ..ledger.records import GenerationRecord, GenerationStatus
from ..ledger.store import OffsetStore
from ..offsets import PartitionKey, flatten, format_offsets, parse_offsets, unflatten
from ..run_lock import RunLock
from ..settings import Settings
from ..source.connector import kafka_read_options
from ..source.initial_offsets import load_initial_offsets
from ..source.kafka_metadata import KafkaMetadata
from ..source.options import parse_options
from ..spark_session import local_session_factory
from ..storage import absolute_uri
from ..validation import WindowSpec
from .generations import committed_generations
from .replay_scan import event_times
from .signature import build_signature
from .timestamps import iso_utc

APPLY_STEPS = ("record_plan", "retire_old", "check_directories", "mark_applied")


class UpgradeError(PipelineError):
    exit_code = 3


class NoLedgerError(UpgradeError):
    exit_code = 2


class UnknownPipelineError(UpgradeError):
    exit_code = 2


class PlanAlreadyAppliedError(UpgradeError):
    """Generation N+1 was planned and applied already; `run` starts it."""


class RollbackRefusedError(UpgradeError):
    pass


@dataclass(frozen=True, slots=True)
class UpgradePlan:
    advice: Advice
    document: dict[str, object] | None  # the plan as the ledger keeps it; None: none needed
    restart: planner.RestartPlan | None
    late: planner.LateRecords | None = None  # None: not counted (no plan, or no scan)

    def to_json(self) -> dict[str, object]:
        return {"advice": self.advice.to_json(), "plan": self.document}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _open_ledger(settings: Settings, spark: Callable[[], SparkSession]) -> OffsetStore:
    if not ledger_exists(settings.ledger):
        where = f"no ledger at {settings.ledger.location}"
        lost = _lost_ledger(
            settings.pipeline.root, "the ledger was lost", "Point ledger.location at the ledger"
        )
        raise NoLedgerError(
            f"{where}, but {lost}"
            if lost
            else f"{where}: nothing has run yet, or ledger.location points elsewhere"
        )
    return open_store(settings.ledger, spark=spark)


def _live_generation(
    store: OffsetStore, pipeline: str, root: str | None = None
) -> GenerationRecord:
    generations = store.generations(pipeline)
    if not generations:
        known = ", ".join(store.pipelines()) or "none"
        where = f"the ledger {store.describe()} knows no pipeline {pipeline!r} (it knows: {known})"
        lost = (
            None
            if root is None
            else _lost_ledger(
                root,
                "pipeline.name is wrong, the ledger lost this pipeline's records",
                "Check pipeline.name; if it is right, point ledger.location at the ledger",
            )
        )
        raise UnknownPipelineError(
            f"{where}, but {lost}" if lost else f"{where}; check pipeline.name"
        )
    live = [g for g in generations if g.status is not GenerationStatus.RETIRED]
    if not live:
        raise UpgradeError(f"every generation of {pipeline!r} is retired; nothing to upgrade")
    return max(live, key=lambda g: g.generation)


def _lost_ledger(root: str, causes: str, remedy: str) -> str | None:
    """Why planning stops when the pipeline root holds checkpoints the ledger does not know.

    Without the ledger's record of a generation (the signature it ran with, the plan that
    started it) the advisor has nothing to compare and W has no floor, so the upgrade
    refuses rather than guess them from the checkpoint. None when nothing has committed.
    """
    committed = committed_generations(root)
    if not committed:
        return None
    newest = max(committed)
    found = (
        f"{root} holds the checkpoint of generation {newest}, with committed batches: "
        f"{causes}, or ledger.location points elsewhere. An upgrade needs the ledger's record "
        "of the generation (the signature it ran with) and will not guess it from the "
        f"checkpoint. {remedy}"
    )
    if committed == [1]:
        return (
            f"{found}, or run generation 1 once more with the settings it ran with (`run "
            "--available-now`): it records itself again and marks the batches the ledger lost "
            "as gaps, and the plan falls back to the checkpoint for those"
        )
    return (
        f"{found}, or restore the ledger from a backup: generation {newest} started from a "
        "plan that only the ledger held"
    )


def compute_plan(
    settings: Settings,
    store: OffsetStore,
    spark: SparkSession,
    old: GenerationRecord,
    *,
    accept_data_loss: bool,
    scan: bool = True,
) -> UpgradePlan:
    """The advisor's verdict and, when a new checkpoint is needed, the restart plan."""
    root = absolute_uri(settings.pipeline.root)
    old_layout = GenerationLayout(root, old.generation)
    advice = advise(old.signature, build_signature(spark, settings, old_layout))
    if advice.verdict is not Verdict.NEEDS_NEW_CHECKPOINT:
        return UpgradePlan(advice, None, None)
    state = read_checkpoint(old_layout.checkpoint)
    _refuse_sink_ahead(old_layout, state)
    # The windows the old generation wrote are of its own spec, whatever the new one is.
    old_window = _recorded_window(old) or settings.window.spec
    window_changed = (old_window.duration_ms, old_window.slide_ms) != (
        settings.window.spec.duration_ms,
        settings.window.spec.slide_ms,
    )
    restart = planner.plan_restart(
        window=old_window,
        checkpoint=_checkpoint_facts(state),
        ledger=[
            planner.BatchFacts(
                batch_id=batch.batch_id,
                start_offsets=None
                if batch.start_offsets is None
                else planner.flat_offsets(batch.start_offsets),
                end_offsets=planner.flat_offsets(batch.end_offsets),
                watermark_ms=batch.batch_watermark_ms,
                min_event_time_ms=batch.min_event_time_ms,
                max_event_time_ms=batch.max_event_time_ms,
            )
            for batch in store.batches(old.pipeline, old.generation)
        ],
        gap_batch_ids=[
            gap.batch_id
            for gap in store.gaps(old.pipeline, old.generation)
            if gap.batch_id is not None
        ],
        initial_offsets=_initial_offsets(old, old_layout),
        max_watermark_delay_ms=max_watermark_delay_ms(old.signature),
        written_through_ms=_plan_number(old, "replay_after_ms"),
    )
    options = parse_options(kafka_read_options(settings.kafka))
    metadata = KafkaMetadata(
        options.client_config,
        f"{options.group_id_prefix}-planner-{uuid.uuid4().hex}",
        options.poll_timeout_ms / 1000,
    )
    try:
        subscribed = metadata.partitions(settings.kafka.topics, None)
        earliest = metadata.earliest({*restart.restart_offsets, *subscribed})
        # What is already waiting when the plan is made: the late records are counted in it.
        latest = metadata.latest(subscribed) if scan else {}
    finally:
        metadata.close()
    restart = planner.check_retention(restart, earliest, accept_data_loss=accept_data_loss)
    if scan:
        restart = planner.tighten(
            restart,
            lambda partition, start, end: event_times(spark, settings, partition, start, end),
        )
    # Where the old quarantine stopped; if it never committed, where the old query began,
    # so that no malformed record between there and the restart goes unquarantined.
    initial = _initial_offsets(old, old_layout)
    quarantine = (
        _quarantine_offsets(old_layout)
        or (None if initial is None else format_offsets(unflatten(initial)))
        or restart.starting_offsets
    )
    # Both connectors want startingOffsets to name exactly the subscribed partitions: after
    # a change of topics, the old ones go and the new ones start where the settings say.
    position = _new_partition_position(settings.kafka.starting_offsets)
    restart_offsets, added, dropped = _align(restart.restart_offsets, subscribed, position)
    quarantine_offsets = _align(flatten(parse_offsets(quarantine)), subscribed, position)[0]
    new_layout = GenerationLayout(root, next_generation(store, old.pipeline))
    replay_after, replay_from = planner.replay_filter_bounds(
        restart.watermark_ms, old_window, window_changed, _plan_number(old, "replay_from_event_ms")
    )
    late = None
    if scan:
        late = planner.count_late_records(
            _waiting_ranges(restart.end_offsets, restart_offsets, earliest, latest),
            _scan_in_chunks(spark, settings),
            window=settings.window.spec,
            replay_after_ms=replay_after,
            replay_from_event_ms=replay_from,
        )
    document: dict[str, object] = {
        "pipeline": old.pipeline,
        "from_generation": old.generation,
        "to_generation": new_layout.generation,
        "last_committed_batch": restart.last_committed_batch,
        "watermark_ms": restart.watermark_ms,
        "window_changed": window_changed,
        "replay_after_ms": replay_after,
        "replay_from_event_ms": replay_from,
        "replay_filter": " and ".join(
            [
                *([] if replay_from is None else [f"event_time >= {replay_from}"]),
                *([] if replay_after is None else [f"window.end > {replay_after}"]),
            ]
        ),
        "restart_offsets": format_offsets(unflatten(restart_offsets)),
        "quarantine_offsets": format_offsets(unflatten(quarantine_offsets)),
        "partitions_added": [f"{topic}:{number}" for topic, number in added],
        "partitions_dropped": [f"{topic}:{number}" for topic, number in dropped],
        "records_to_replay": restart.records_to_replay,
        "late_before_event_ms": planner.late_event_threshold_ms(
            settings.window.spec, replay_after, replay_from
        ),
        "late_records": None if late is None else late.late_records,
        "late_scan": None if late is None else late.to_json(),
        "restart": restart.to_json(),
        "advice": advice.to_json(),
        "checkpoint": new_layout.checkpoint,
        "output": new_layout.output,
        "created_at_ms": _now_ms(),
        "applied_at_ms": None,
        "consumed_at_ms": None,
    }
    return UpgradePlan(advice, document, restart, late)


# Offsets read per request when scanning for late records: a backlog may be long.
LATE_SCAN_CHUNK = 100_000


def _scan_in_chunks(spark: SparkSession, settings: Settings) -> planner.Scan:
    def scan(partition: PartitionKey, start: int, end: int) -> Iterator[tuple[int, int | None]]:
        for begin in range(start, end, LATE_SCAN_CHUNK):
            yield from event_times(
                spark, settings, partition, begin, min(end, begin + LATE_SCAN_CHUNK)
            )

    return scan


def _waiting_ranges(
    old_end: planner.FlatOffsets,
    restart_offsets: planner.FlatOffsets,
    earliest: planner.FlatOffsets,
    latest: planner.FlatOffsets,
) -> dict[PartitionKey, tuple[int, int]]:
    """The offsets the new generation reads after the old one's end, up to the latest now.

    ``restart_offsets`` names exactly the subscribed partitions. A partition the old
    generation read is waiting from its end offset; a new one from its earliest offset if
    it starts there (-2), and not at all if it starts at latest. Records retention already
    deleted are not waiting.
    """
    ranges = {}
    for key, restart_at in restart_offsets.items():
        if key not in latest:
            continue
        if key in old_end:
            begin = old_end[key]
        elif restart_at == planner.EARLIEST:
            begin = earliest.get(key, latest[key])
        else:
            begin = latest[key]
        ranges[key] = (max(begin, earliest.get(key, begin)), latest[key])
    return ranges


def _plan_number(record: GenerationRecord, key: str) -> int | None:
    """An integer the plan that started ``record``'s generation holds, if any."""
    value = None if record.plan is None else record.plan.get(key)
    return value if type(value) is int else None


def _new_partition_position(starting_offsets: str) -> int:
    """-2 (earliest) or -1 (latest) for a partition the old generation never read."""
    return -1 if starting_offsets.strip() == "latest" else -2


def _align(
    offsets: planner.FlatOffsets, subscribed: list[PartitionKey], position: int
) -> tuple[dict[PartitionKey, int], list[PartitionKey], list[PartitionKey]]:
    """``offsets`` for exactly ``subscribed``; also the partitions added and dropped."""
    wanted = set(subscribed)
    added = sorted(wanted - set(offsets))
    dropped = sorted(set(offsets) - wanted)
    aligned = {key: offset for key, offset in offsets.items() if key in wanted}
    aligned.update(dict.fromkeys(added, position))
    return aligned, added, dropped


def _recorded_window(record: GenerationRecord) -> WindowSpec | None:
    window = record.signature.get("window")
    if not isinstance(window, dict):
        return None
    try:
        return WindowSpec(
            duration_ms=int(window["duration_ms"]),
            slide_ms=int(window["slide_ms"]),
            watermark_delay_ms=int(window["watermark_delay_ms"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _checkpoint_facts(state: CheckpointState) -> planner.CheckpointFacts:
    batches = []
    for batch_id, entry in state.offsets.items():
        offsets = entry.kafka_offsets
        if batch_id in state.commits and offsets is not None:
            batches.append(
                planner.CheckpointBatch(
                    batch_id=batch_id,
                    end_offsets=flatten(parse_offsets(offsets)),
                    watermark_ms=entry.batch_watermark_ms,
                )
            )
    return planner.CheckpointFacts(
        last_committed_batch=state.last_committed_batch,
        batches=tuple(batches),
        next_watermark_ms=state.next_watermark_ms,
    )


def _initial_offsets(old: GenerationRecord, layout: GenerationLayout) -> planner.FlatOffsets | None:
    """Where the old generation's query began: its plan, else its persisted initial offsets."""
    if old.plan is not None and old.plan.get("restart_offsets"):
        return flatten(parse_offsets(str(old.plan["restart_offsets"])))
    stored = load_initial_offsets(layout.initial_offsets)
    return None if stored is None else flatten(stored)


def _quarantine_offsets(layout: GenerationLayout) -> str | None:
    """Where the old quarantine query stopped: the new one goes on from there, exactly."""
    try:
        last = read_checkpoint(layout.quarantine_checkpoint).last_committed
    except CheckpointError:
        return None
    return None if last is None else last.kafka_offsets


def render_plan(plan: UpgradePlan, *, as_json: bool) -> str:
    if as_json:
        return json.dumps(plan.to_json(), indent=2, sort_keys=True)
    lines = list(plan.advice.sentences())
    if plan.restart is not None and plan.document is not None:
        lines.append("")
        lines += plan.restart.explain()
        if plan.late is not None:
            lines.append(plan.late.explain())
        else:
            cut = plan.document.get("late_before_event_ms")
            lines.append(
                "Late records: not counted (--no-scan)."
                + (
                    ""
                    if cut is None
                    else f" Records after the old generation's end offsets with event times "
                    f"before {iso_utc(int(str(cut)))} will be dropped as late."
                )
            )
        lines.append("")
        document = plan.document
        watermark = iso_utc(int(str(document["watermark_ms"])))
        lines.append(
            f"Generation {document['to_generation']} will start at "
            f"{document['restart_offsets']} with the replay filter "
            f"{document['replay_filter']} (W = {watermark}), writing to {document['output']}."
        )
        lines.append("Apply it with `upgrade apply`, then `run`.")
    return "\n".join(lines)


def plan_command(
    settings: Settings,
    *,
    as_json: bool,
    accept_data_loss: bool,
    scan: bool = True,
    spark: Callable[[], SparkSession] | None = None,
) -> str:
    session = spark or local_session_factory(settings, purpose="upgrade")
    with _open_ledger(settings, session) as store:
        old = _live_generation(store, settings.pipeline.name, settings.pipeline.root)
        if old.status is GenerationStatus.PLANNED and old.plan is not None:
            applied = old.plan.get("applied_at_ms") is not None
            state = "applied; `run` starts it" if applied else "not applied yet"
            return f"generation {old.generation} is already planned ({state}):\n" + json.dumps(
                old.plan, indent=2, sort_keys=True
            )
        _refuse_if_running(settings, old)
        plan = compute_plan(
            settings, store, session(), old, accept_data_loss=accept_data_loss, scan=scan
        )
    return render_plan(plan, as_json=as_json)


def _refuse_if_running(settings: Settings, old: GenerationRecord) -> None:
    layout = GenerationLayout(absolute_uri(settings.pipeline.root), old.generation)
    # Taking the lock and releasing it at once is the check: a live run holds it.
    with RunLock(layout.run_lock, purpose="upgrade plan"):
        pass


def apply_command(
    settings: Settings,
    *,
    accept_data_loss: bool,
    scan: bool = True,
    spark: Callable[[], SparkSession] | None = None,
    after_step: Callable[[str], None] = lambda step: None,
) -> str:
    """Apply the upgrade; ``after_step`` lets tests crash the command between steps."""
    session = spark or local_session_factory(settings, purpose="upgrade")
    pipeline = settings.pipeline.name
    root = absolute_uri(settings.pipeline.root)
    with _open_ledger(settings, session) as store:
        live = _live_generation(store, pipeline, settings.pipeline.root)
        if live.status is GenerationStatus.PLANNED:
            if live.plan is not None and live.plan.get("applied_at_ms") is not None:
                raise PlanAlreadyAppliedError(
                    f"generation {live.generation} of {pipeline!r} is already planned and "
                    "applied: `run` starts it (or `upgrade rollback` returns to generation "
                    f"{live.generation - 1})"
                )
            old = store.generation(pipeline, _previous(live))
            if old is None:
                raise UpgradeError(f"generation {_previous(live)} is not in the ledger")
            new = live
        else:
            old, new = live, None
        old_layout = GenerationLayout(root, old.generation)
        with RunLock(old_layout.run_lock, purpose="upgrade apply"):
            if new is None:
                plan = compute_plan(
                    settings, store, session(), old, accept_data_loss=accept_data_loss, scan=scan
                )
                if plan.document is None:
                    return "Nothing to apply. " + " ".join(plan.advice.sentences())
                new_layout = GenerationLayout(root, int(str(plan.document["to_generation"])))
                _check_fresh(new_layout)
                now = _now_ms()
                new = GenerationRecord(
                    pipeline=pipeline,
                    generation=new_layout.generation,
                    status=GenerationStatus.PLANNED,
                    signature=build_signature(session(), settings, new_layout),
                    plan=plan.document,
                    created_at_ms=now,
                    updated_at_ms=now,
                )
                store.record_generation(new)
            after_step("record_plan")
            if old.status is not GenerationStatus.RETIRED:
                store.set_generation_status(
                    pipeline, old.generation, GenerationStatus.RETIRED, at_ms=_now_ms()
                )
            after_step("retire_old")
            new_layout = GenerationLayout(root, new.generation)
            _check_fresh(new_layout)
            after_step("check_directories")
            assert new.plan is not None
            now = _now_ms()
            store.record_generation(
                replace(new, plan={**new.plan, "applied_at_ms": now}, updated_at_ms=now)
            )
            after_step("mark_applied")
    return (
        f"generation {old.generation} retired; generation {new.generation} planned and applied.\n"
        f"  starts at   {new.plan['restart_offsets']}\n"
        f"  filter      {new.plan['replay_filter']}\n"
        f"  output      {new_layout.output}\n"
        f"  checkpoint  {new_layout.checkpoint}\n"
        "Start it with `run`."
    )


def _check_fresh(layout: GenerationLayout) -> None:
    """A new generation must not have committed anything, in either query or either sink."""
    written = _written(layout)
    if written:
        raise UpgradeError(
            f"generation {layout.generation} already committed output ({', '.join(written)}); "
            "refusing to plan over it"
        )


def _written(layout: GenerationLayout) -> list[str]:
    """The directories of ``layout`` that hold a committed batch."""
    found = []
    for checkpoint in (layout.checkpoint, layout.quarantine_checkpoint):
        try:
            if read_checkpoint(checkpoint).last_committed_batch is not None:
                found.append(checkpoint)
        except NotACheckpointError:
            pass
    for sink in (layout.output, layout.quarantine):
        if read_sink_log(sink).batch_ids:
            found.append(sink)
    return found


def next_generation(store: OffsetStore, pipeline: str) -> int:
    """A number no generation of ``pipeline`` ever had: directories are never reused."""
    return max((g.generation for g in store.generations(pipeline)), default=0) + 1


def _previous(record: GenerationRecord) -> int:
    if record.plan is not None and record.plan.get("from_generation") is not None:
        return int(str(record.plan["from_generation"]))
    return record.generation - 1


def _refuse_sink_ahead(layout: GenerationLayout, state: CheckpointState) -> None:
    """The sink commits batch k before the checkpoint's commits/k is written.

    A run killed between the two leaves batch k's windows in the output while the
    checkpoint says k never ran. Planning from batch k-1 would write them again; running
    the old generation once more lets Spark finish batch k (its sink skips the rewrite).
    """
    sink_last = read_sink_log(layout.output).last_batch_id
    committed = state.last_committed_batch
    if sink_last is not None and (committed is None or sink_last > committed):
        raise UpgradeError(
            f"generation {layout.generation}'s output holds batch {sink_last} but its "
            f"checkpoint committed only up to batch {committed}: the last run was killed "
            f"mid-commit. Run generation {layout.generation} once more (with the old settings, "
            "e.g. `run --available-now`) so that it finishes that batch, then plan again"
        )


def rollback_command(settings: Settings, *, spark: Callable[[], SparkSession] | None = None) -> str:
    """Go back to the previous generation, if the new one has not committed a batch."""
    session = spark or local_session_factory(settings, purpose="upgrade")
    pipeline = settings.pipeline.name
    root = absolute_uri(settings.pipeline.root)
    with _open_ledger(settings, session) as store:
        live = _live_generation(store, pipeline, settings.pipeline.root)
        if live.plan is None or live.plan.get("from_generation") is None:
            raise RollbackRefusedError(
                f"generation {live.generation} of {pipeline!r} did not start from a plan; "
                "there is nothing to roll back"
            )
        layout = GenerationLayout(root, live.generation)
        with RunLock(layout.run_lock, purpose="upgrade rollback"):
            written = _written(layout)
            if written:
                raise RollbackRefusedError(
                    f"generation {live.generation} has committed output ({', '.join(written)}): "
                    "it is live, so it cannot be rolled back; plan a new upgrade instead"
                )
            now = _now_ms()
            store.set_generation_status(
                pipeline, _previous(live), GenerationStatus.RUNNING, at_ms=now
            )
            store.record_generation(
                replace(
                    live,
                    status=GenerationStatus.RETIRED,
                    plan={**live.plan, "rolled_back_at_ms": now},
                    updated_at_ms=now,
                )
            )
    return (
        f"generation {live.generation} retired unused; generation {_previous(live)} is "
        "current again. Its directories were never written and stay unused."
    )
