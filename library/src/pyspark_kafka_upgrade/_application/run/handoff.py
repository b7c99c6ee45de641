"""The old generation's side of a handoff, inside its own run (``_domain.records.handoff``).

    running ──a plan asks for C──▶ stop between batches ──answer──▶ bounded to C ──▶ retired
            (HandoffRequested)     (the supervisor)     (take_handoff)  (HandedOver)  (complete)

Everything it reads and writes is the successor's record in the ledger, where the plan
lives, and its own checkpoints; the new generation's run and ``upgrade status`` read the
same record.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from pyspark_kafka_upgrade._adapters.checkpoint.reader import (
    CheckpointState,
    newest_batch,
    read_checkpoint,
)
from pyspark_kafka_upgrade._adapters.storage.filesystem import (
    StorageError,
    absolute_uri,
    open_location,
)
from pyspark_kafka_upgrade._application.generation.generations import current_generation
from pyspark_kafka_upgrade._application.generation.signature import derive_signature
from pyspark_kafka_upgrade._core.formats.format_errors import CheckpointError
from pyspark_kafka_upgrade._core.planner.advisor import advise
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.advice import Verdict
from pyspark_kafka_upgrade._domain.records.handoff import Handoff, handed_over
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord, GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import UpgradeError
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import iso_utc, now_ms
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout

log = logging.getLogger(__name__)

HANDOFF_REQUESTED = "handoff requested"
HANDED_OVER = "handed over"
HANDOFF_WITHDRAWN = "handoff rolled back"

# How often a running generation looks for a request, and a bounded one at its checkpoint:
# a ledger query or a file read, against a trigger of seconds.
_EVERY_S = 2.0
# A running generation lists the ledger's generations for a request: less often, since on a
# filesystem store that is a listing and a read per generation, and an answer can wait.
_REQUEST_EVERY_S = 5.0


@dataclass(frozen=True, slots=True)
class Successor:
    """The generation planned to take over at C, and its plan."""

    record: GenerationRecord
    plan: UpgradePlan

    @property
    def handoff(self) -> Handoff:
        assert self.plan.handoff is not None  # only such plans make a Successor
        return self.plan.handoff


def generation_to_run(store: OffsetStore, settings: Settings) -> int:
    """The current generation, or the one handing over to it when these settings are its.

    During a handoff two generations run, each from its own deployment: the new one's code
    needs the new checkpoint, the old one's is carried by the old checkpoint. So a run of the
    old code (restarted after a crash, say) goes on with the old generation, to C.
    """
    pipeline = settings.pipeline.name
    current = current_generation(store, pipeline)
    record = store.generation(pipeline, current)
    if record is None or record.plan is None:
        return current
    plan = UpgradePlan.from_json(record.plan)
    handoff = plan.handoff
    old = store.generation(pipeline, plan.from_generation)
    if handoff is None or old is None or not old.signature:
        return current
    # With the Spark installed here: an upgrade may be one of Spark itself.
    layout = GenerationLayout(absolute_uri(settings.pipeline.root), old.generation)
    signature = derive_signature(settings, layout)
    if advise(old.signature, signature.to_json()).verdict is Verdict.NEEDS_NEW_CHECKPOINT:
        return current
    if old.status is GenerationStatus.RETIRED:
        # A supervisor restarting the old deployment would loop on the signature's refusal.
        raise HandoffWaitError(
            f"generation {old.generation} handed over to generation {current} at C = "
            f"{iso_utc(handoff.boundary_ms)} and is retired: this version of the pipeline has "
            "nothing left to run. Stop its deployment; the new version runs generation "
            f"{current}"
        )
    # Refused, it goes on as before until a rollback: still its code's.
    return old.generation


def successor_of(store: OffsetStore, pipeline: str, generation: int) -> Successor | None:
    """The generation a handoff plan starts from ``generation``, while it is not retired."""
    for record in reversed(store.generations(pipeline)):
        if record.generation <= generation or record.plan is None:
            continue
        if record.status is GenerationStatus.RETIRED:
            continue
        plan = UpgradePlan.from_json(record.plan)
        if plan.from_generation == generation and plan.handoff is not None:
            return Successor(record, plan)
    return None


def record_handoff(store: OffsetStore, successor: Successor, handoff: Handoff) -> Successor | None:
    """Write ``handoff`` into the successor's plan, on its record as stored now: the new
    generation's run writes that record too (its status, its signature, its plan consumed).
    None, writing nothing, when the successor was rolled back meanwhile."""
    stored = store.generation(successor.record.pipeline, successor.record.generation)
    if stored is not None and stored.status is GenerationStatus.RETIRED:
        return None
    record = successor.record if stored is None or stored.plan is None else stored
    plan = replace(
        successor.plan if record.plan is None else UpgradePlan.from_json(record.plan),
        handoff=handoff,
    )
    record = replace(record, plan=plan.to_json(), updated_at_ms=now_ms())
    store.record_generation(record)
    return Successor(record, plan)


class WaitStopped(Exception):
    """A stop request arrived while the new generation waited: it ends, never started."""


class HandoffWaitError(UpgradeError):
    """The new generation cannot start: the old one refused C, or did not answer in time."""


# How long the new generation's run waits for the old one to answer. Its run answers within
# a batch and a poll; a longer wait means it is not running.
_ANSWER_TIMEOUT_S = 600.0
_PROGRESS_S = 30.0


def wait_for_handoff(
    store: OffsetStore,
    record: GenerationRecord | None,
    *,
    echo: Callable[[str], None],
    stop: threading.Event | None = None,
    timeout_s: float = _ANSWER_TIMEOUT_S,
) -> GenerationRecord | None:
    """``record``, read again once the old generation took C, if its plan is a handoff: the
    new generation may start only then, with the quarantine where the old one stopped."""
    if record is None or record.plan is None:
        return record
    plan = UpgradePlan.from_json(record.plan)
    handoff = plan.handoff
    if handoff is None or not handoff.pending:
        return _refuse_refused(record, plan)
    echo(
        f"  handoff     waiting for generation {plan.from_generation} to take C = "
        f"{iso_utc(handoff.boundary_ms)} (its run answers between two batches)"
    )
    started = time.monotonic()
    deadline, said = started + timeout_s, started
    while time.monotonic() < deadline:
        if stop is not None and stop.wait(_EVERY_S / 4):
            raise WaitStopped
        if stop is None:
            time.sleep(_EVERY_S / 4)
        if time.monotonic() - said >= _PROGRESS_S:
            said = time.monotonic()
            echo(f"  handoff     still waiting ({said - started:.0f} s of {timeout_s:.0f} s)")
        again = store.generation(record.pipeline, record.generation)
        if again is None or again.plan is None or again.status is GenerationStatus.RETIRED:
            raise HandoffWaitError(
                f"generation {record.generation} was rolled back while it waited for the handoff"
            )
        plan = UpgradePlan.from_json(again.plan)
        if plan.handoff is not None and not plan.handoff.pending:
            return _refuse_refused(again, plan)
    raise HandoffWaitError(
        f"generation {plan.from_generation} did not take the handoff at C = "
        f"{iso_utc(handoff.boundary_ms)} within {timeout_s:.0f} s: start its run (the old "
        "version's `run` answers at once), or go back with `upgrade rollback` (with both "
        "generations' runs stopped)"
    )


def _refuse_refused(record: GenerationRecord, plan: UpgradePlan) -> GenerationRecord:
    if plan.handoff is not None and plan.handoff.refused is not None:
        raise HandoffWaitError(
            f"generation {plan.from_generation} refused the handoff to generation "
            f"{record.generation}: {plan.handoff.refused}. Nothing was written twice; go back "
            "with `upgrade rollback` and plan a later C, or an ordinary upgrade"
        )
    return record


class _Every:
    """True at most once per ``period_s``; the first call is due."""

    def __init__(self, period_s: float) -> None:
        self._period, self._next = period_s, 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + self._period
        return True


class HandoffRequested:
    """The supervisor's interrupt while a generation runs unbounded: a plan asks it for C.

    Only a plan already applied counts: one still being applied may be rolled back.
    """

    def __init__(self, store: OffsetStore, pipeline: str, generation: int) -> None:
        self._store, self._pipeline, self._generation = store, pipeline, generation
        self._every = _Every(_REQUEST_EVERY_S)

    def __call__(self) -> str | None:
        if not self._every.due():
            return None
        try:
            successor = successor_of(self._store, self._pipeline, self._generation)
        except PipelineError as error:
            # The ledger's outage is the listener's to record; the run goes on.
            log.warning("could not look for a handoff request in the ledger: %s", error)
            return None
        if successor is None or successor.plan.applied_at_ms is None:
            return None
        return HANDOFF_REQUESTED if successor.handoff.pending else None


def take_handoff(
    store: OffsetStore, layout: GenerationLayout, successor: Successor
) -> Successor | None:
    """Answer the request, with the queries stopped: acknowledged while the last batch the
    checkpoint holds (a table may have committed one the checkpoint has only planned) ran with
    a watermark below C, refused otherwise. Answered once: a later call keeps the answer.
    None when the successor was rolled back meanwhile: nothing to answer."""
    if not successor.handoff.pending:
        return successor
    # A checkpoint that exists but cannot be read is raised, never taken for "no batch".
    planned = newest_batch(layout.checkpoint)
    watermark = 0 if planned is None else planned[1]  # Spark's watermark before any batch
    ended = quarantine_end(layout.quarantine_checkpoint)
    answered = successor.handoff.acknowledge(
        batch_id=None if planned is None else planned[0],
        batch_watermark_ms=watermark,
        # No committed quarantine batch: the new quarantine starts where the plan says.
        quarantine_end_offsets=ended or successor.plan.quarantine_starting_offsets,
        at_ms=now_ms(),
    )
    return record_handoff(store, successor, answered)


class HandedOver:
    """The supervisor's interrupt while a generation runs bounded to C: a committed batch ran
    with a watermark at or after C, so it wrote every window it owns; or the new generation
    was rolled back, and it must write the windows after C itself again (its state kept
    them: the bound drops them only on the way out)."""

    def __init__(
        self, store: OffsetStore, pipeline: str, layout: GenerationLayout, boundary_ms: int
    ) -> None:
        self._store, self._pipeline, self._layout = store, pipeline, layout
        self._boundary = boundary_ms
        self._every = _Every(_EVERY_S)

    def __call__(self) -> str | None:
        if not self._every.due():
            return None
        layout = self._layout
        try:
            withdrawn = successor_of(self._store, self._pipeline, layout.generation) is None
        except PipelineError as error:
            log.warning("could not read the handoff in the ledger: %s", error)
            return None
        if withdrawn:
            return HANDOFF_WITHDRAWN
        state = _read(layout.checkpoint)
        watermark = None if state is None else state.watermark_ms
        return HANDED_OVER if handed_over(self._boundary, watermark) else None


def complete_handoff(store: OffsetStore, pipeline: str, generation: int) -> None:
    """Retire the old generation: what says it handed over (its own record, which only it
    writes now; the new generation's run writes the plan's)."""
    store.set_generation_status(pipeline, generation, GenerationStatus.RETIRED, at_ms=now_ms())


def quarantine_end(checkpoint: str) -> str | None:
    """Where the quarantine's last committed batch ended; None when it committed none."""
    if not open_location(checkpoint).exists():
        return None
    last = read_checkpoint(checkpoint).last_committed
    return None if last is None else last.kafka_offsets


def _read(checkpoint: str) -> CheckpointState | None:
    try:
        return read_checkpoint(checkpoint)
    except CheckpointError:
        return None  # no batch yet
    except StorageError as error:
        # A passing fault of the storage: the next poll reads it again; the run goes on.
        log.warning("could not read the checkpoint %s: %s", checkpoint, error)
        return None
