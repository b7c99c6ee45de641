"""The ledger and directory lookups every upgrade command starts with, and their refusals.

Which generation is live, whether the ledger is the pipeline's at all (and if not, whether
it was lost), whether a run still holds the old generation, whether a new generation's
directories are untouched: each answer, or one line saying why the command stops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade._adapters.checkpoint.reader import read_checkpoint
from pyspark_kafka_upgrade._adapters.ledger.opening import ledger_exists, open_store
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._adapters.storage.run_lock import RunLock
from pyspark_kafka_upgrade._application.generation.generations import committed_generations
from pyspark_kafka_upgrade._core.formats.format_errors import NotACheckpointError
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._core.settings.sections import SinkSettings
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord, GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import (
    NoLedgerError,
    UnknownPipelineError,
    UpgradeError,
)
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.words import when

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def open_ledger(settings: Settings, spark: Callable[[], SparkSession]) -> OffsetStore:
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


def live_generation(store: OffsetStore, pipeline: str, root: str | None = None) -> GenerationRecord:
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


def refuse_during_handoff(store: OffsetStore, live: GenerationRecord) -> None:
    """Refuse a new plan while ``live`` is taking over from a generation still writing its
    windows to C: a plan from ``live`` would leave the old one's windows after its
    watermark to nobody, or to two generations."""
    if live.plan is None:
        return
    plan = UpgradePlan.from_json(live.plan)
    handoff = plan.handoff
    if handoff is None or handoff.refused is not None:
        return
    old = store.generation(live.pipeline, plan.from_generation)
    if old is None or old.status is GenerationStatus.RETIRED:
        return
    raise UpgradeError(
        f"generation {plan.from_generation} is still handing over to generation "
        f"{live.generation} at C = {when(handoff.boundary_ms)}: plan the next upgrade once it "
        f"has written its windows to C and retired itself, or roll the handoff back with "
        "`upgrade rollback` while it can be"
    )


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


def refuse_if_running(settings: Settings, old: GenerationRecord, purpose: str) -> None:
    layout = GenerationLayout(absolute_uri(settings.pipeline.root), old.generation)
    # Taking the lock and releasing it at once is the check: a live run holds it.
    with RunLock(layout.run_lock, purpose=purpose):
        pass


def check_fresh(layout: GenerationLayout, sink: SinkSettings) -> None:
    """A new generation must not have committed anything, in either query or either sink
    (the settings' ``[sink]``)."""
    written = committed_directories(layout, sink)
    if written:
        raise UpgradeError(
            f"generation {layout.generation} already committed output ({', '.join(written)}); "
            "refusing to plan over it"
        )


def committed_directories(layout: GenerationLayout, sink: SinkSettings) -> list[str]:
    """The checkpoints of ``layout`` and the locations of its sinks (the output's and the
    quarantine's, as the settings' ``[sink]`` put them) that hold a committed batch."""
    found = []
    for checkpoint in (layout.checkpoint, layout.quarantine_checkpoint):
        try:
            if read_checkpoint(checkpoint).last_committed_batch is not None:
                found.append(checkpoint)
        except NotACheckpointError:
            pass
    for quarantine in (False, True):
        opened = open_sink(sink, layout.root, quarantine=quarantine)
        if opened.last_committed_batch(layout.generation) is not None:
            found.append(opened.location(layout.generation))
    return found
