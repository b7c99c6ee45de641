"""What a run settles in the ledger around its queries, and how its generation starts.

Before the queries: refuse a lost ledger, record the generation with its signature (or
refuse a change its checkpoint cannot carry), mark batches a killed run committed but never
recorded. While they run: mark the plan consumed at the first commit. After: wait until the
ledger holds the last committed batch.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from pyspark_kafka_upgrade._adapters.checkpoint.reader import last_committed_batch, read_checkpoint
from pyspark_kafka_upgrade._adapters.spark.listener import LedgerListener
from pyspark_kafka_upgrade._application.generation.generations import committed_generations
from pyspark_kafka_upgrade._core.formats.format_errors import CheckpointError
from pyspark_kafka_upgrade._core.planner.advisor import advise
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.advice import Verdict
from pyspark_kafka_upgrade._domain.records.ledger import (
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
)
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.signature import PipelineSignature
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import now_ms
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.offsets import (
    flatten,
    format_offsets,
    parse_offsets,
    unflatten,
)

log = logging.getLogger(__name__)

# How long a stop waits for the listener bus to deliver the last progress events.
_LEDGER_CATCH_UP_TIMEOUT_S = 30.0
_POLL_S = 1


class UpgradeRequiredError(PipelineError):
    """The settings or code changed in a way the current checkpoint cannot carry."""

    exit_code = 3


class UpgradeIncompleteError(PipelineError):
    """The newest generation was planned, but its plan was not applied to the end."""

    exit_code = 3


@dataclass(frozen=True, slots=True)
class GenerationStart:
    """How a generation's queries start: from the settings, or from an applied plan."""

    plan: UpgradePlan | None = None

    @property
    def from_plan(self) -> bool:
        return self.plan is not None

    @property
    def starting_offsets(self) -> str | None:
        """For the aggregates query; None: the settings' own."""
        return None if self.plan is None else self.plan.starting_offsets

    @property
    def quarantine_offsets(self) -> str | None:
        """Where the old generation's quarantine stopped: planned, or, in a handoff, where
        the old generation stopped it when it took C."""
        if self.plan is None:
            return None
        handoff = self.plan.handoff
        planned = self.plan.quarantine_offsets
        if handoff is not None and handoff.acknowledged is not None:
            # Per partition the new generation reads: one the old one never read (a topic
            # it adds) starts where the plan says.
            stopped = flatten(parse_offsets(handoff.acknowledged.quarantine_end_offsets))
            planned = {key: stopped.get(key, offset) for key, offset in planned.items()}
        return format_offsets(unflatten(planned))

    @property
    def replay_after_ms(self) -> int | None:
        """W of the generation before: (event, window) pairs with window end <= W are
        dropped for the whole life of the generation, since its checkpoint expects that
        query plan."""
        return None if self.plan is None else self.plan.replay_filter.window_end_after_ms

    @property
    def replay_from_event_ms(self) -> int | None:
        """Set when a window change split the generations in event time."""
        return None if self.plan is None else self.plan.replay_filter.event_time_from_ms


def generation_start(record: GenerationRecord | None) -> GenerationStart:
    """The start of the generation ``record`` describes; refuses a plan left half applied."""
    if record is None or record.plan is None:
        return GenerationStart()
    plan = UpgradePlan.from_json(record.plan)
    if record.status is GenerationStatus.PLANNED and plan.applied_at_ms is None:
        raise UpgradeIncompleteError(
            f"generation {record.generation} of {record.pipeline!r} is planned but its plan "
            "was not applied completely: run `upgrade apply` to finish it, or "
            "`upgrade rollback` to go back"
        )
    return GenerationStart(plan)


def refuse_without_history(store: OffsetStore, settings: Settings, generation: int) -> None:
    """Refuse to start generation 1 on a lost ledger when later generations exist.

    With no record, the current generation looks like 1; resuming its checkpoint would write
    again the windows later generations wrote, and without the plan that started them.
    """
    if generation != 1 or store.generations(settings.pipeline.name):
        return
    later = [n for n in committed_generations(settings.pipeline.root) if n > 1]
    if later:
        raise UpgradeIncompleteError(
            f"the ledger ({store.describe()}) knows no generation of "
            f"{settings.pipeline.name!r}, but {settings.pipeline.root} holds committed "
            f"checkpoints of generations {', '.join(map(str, later))}: the ledger was lost or "
            "ledger.location points elsewhere. Restore the ledger or point ledger.location at "
            "it; running now would resume generation 1 and write its windows again"
        )


def record_generation(
    store: OffsetStore,
    pipeline: str,
    layout: GenerationLayout,
    existing: GenerationRecord | None,
    signature: PipelineSignature,
) -> list[str]:
    """Record the generation as running with ``signature``; the changes since the signature
    it recorded before, which its checkpoint carries, as sentences for the run's banner.

    Refuses a signature the generation's checkpoint cannot carry.
    """
    now = now_ms()
    carried = refuse_uncarried(existing, signature, layout.generation)
    store.record_generation(
        GenerationRecord(
            pipeline=pipeline,
            generation=layout.generation,
            status=GenerationStatus.RUNNING,
            # With the largest watermark delay of any run so far: the upgrade planner needs
            # it to bound the events of batches the ledger missed.
            signature=signature.with_history(
                None if existing is None else existing.signature
            ).to_json(),
            plan=None if existing is None else existing.plan,
            created_at_ms=now if existing is None else existing.created_at_ms,
            updated_at_ms=now,
        )
    )
    return carried


def refuse_uncarried(
    existing: GenerationRecord | None, signature: PipelineSignature, generation: int
) -> list[str]:
    """The changes since the signature ``existing`` recorded, as sentences, when generation
    ``generation``'s checkpoint can carry them; refuses them when it cannot."""
    if existing is None or not existing.signature:
        return []
    advice = advise(existing.signature, signature.to_json())
    if advice.verdict is Verdict.NEEDS_NEW_CHECKPOINT:
        raise UpgradeRequiredError(
            f"generation {generation}'s checkpoint cannot carry this version of the pipeline: "
            + "; ".join(advice.sentences())
            + " Run `upgrade plan` to see how a new generation would start."
        )
    return [change.sentence() for change in advice.changes]


def mark_unrecorded_batches(
    store: OffsetStore, pipeline: str, layout: GenerationLayout
) -> list[int]:
    """Write a gap marker for each committed batch the ledger lacks, and return their ids.

    A driver killed between a commit and its listener's write (the listener runs after the
    commit, asynchronously) leaves that batch committed but unrecorded for good, since Spark
    never runs a committed batch again. Its offsets and watermark are in the checkpoint, but
    not its event-time bounds, so a record made up now would mislead the planner; a marker
    says the ledger is incomplete there, and the planner falls back to the checkpoint.
    """
    try:
        committed = read_checkpoint(layout.checkpoint).commits
    except CheckpointError:
        return []  # no checkpoint yet: nothing committed
    known = {batch.batch_id for batch in store.batches(pipeline, layout.generation)}
    gaps = store.gaps(pipeline, layout.generation)
    known |= {gap.batch_id for gap in gaps if gap.batch_id is not None}
    missing = [batch_id for batch_id in committed if batch_id not in known]
    now = now_ms()
    for batch_id in missing:
        store.record_gap(
            LedgerGap(
                pipeline=pipeline,
                generation=layout.generation,
                batch_id=batch_id,
                reason=f"batch {batch_id} committed, but its run stopped before the ledger "
                "recorded it",
                recorded_at_ms=now,
            )
        )
    return missing


class PlanConsumption:
    """Once the generation committed a batch, its plan has done its work: say so, once.

    Polls only the checkpoint. The record is read again at the one write, so that what
    another process wrote meanwhile (a rollback after this run lost its lock) is kept.
    """

    def __init__(
        self, store: OffsetStore, pipeline: str, layout: GenerationLayout, start: GenerationStart
    ) -> None:
        self._store = store
        self._pipeline = pipeline
        self._layout = layout
        self._pending = start.plan is not None and start.plan.consumed_at_ms is None

    def check(self) -> None:
        if not self._pending or last_committed_batch(self._layout.checkpoint) is None:
            return
        self._pending = False
        record = self._store.generation(self._pipeline, self._layout.generation)
        plan = None if record is None or record.plan is None else UpgradePlan.from_json(record.plan)
        if record is None or plan is None or plan.consumed_at_ms is not None:
            return
        now = now_ms()
        self._store.record_generation(
            replace(record, plan=plan.consumed(now).to_json(), updated_at_ms=now)
        )


def wait_for_ledger(
    store: OffsetStore, ledger: LedgerListener, layout: GenerationLayout, batch_id: int | None
) -> None:
    """Wait until the ledger holds (or has given up on) the last committed batch.

    Progress events reach the listener asynchronously, after the batch committed. A batch
    committed by an earlier run is already in the store; one of this run may still be on
    its way.
    """
    if batch_id is None:
        return
    deadline = time.monotonic() + _LEDGER_CATCH_UP_TIMEOUT_S
    while time.monotonic() < deadline:
        last = store.last_batch(ledger.pipeline, layout.generation)
        if (last is not None and last.batch_id >= batch_id) or ledger.wait_for_batch(
            batch_id, timeout_s=_POLL_S
        ):
            return
        if any(gap.batch_id == batch_id for gap in store.gaps(ledger.pipeline, layout.generation)):
            return  # committed by a run that was killed: marked, never to be recorded
    log.warning(
        "the ledger has not recorded batch %d within %.0f s; the upgrade planner will fall "
        "back to the checkpoint for it",
        batch_id,
        _LEDGER_CATCH_UP_TIMEOUT_S,
    )
