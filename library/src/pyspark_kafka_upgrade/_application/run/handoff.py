"""The old generation's side of a handoff, inside its own run (``_domain.records.handoff``).

    running ──a plan asks for C──▶ stop between batches ──answer──▶ bounded to C ──▶ retired
            (HandoffRequested)     (the supervisor)     (take_handoff)  (HandedOver)  (complete)

Everything it reads and writes is the successor's record in the ledger, where the plan
lives, and its own checkpoints; the new generation's run and ``upgrade status`` read the
same record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from pyspark_kafka_upgrade._adapters.checkpoint.reader import CheckpointState, read_checkpoint
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._application.generation.generations import current_generation
from pyspark_kafka_upgrade._application.generation.signature import derive_signature
from pyspark_kafka_upgrade._core.formats.format_errors import CheckpointError
from pyspark_kafka_upgrade._core.planner.advisor import advise
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.records.advice import Verdict
from pyspark_kafka_upgrade._domain.records.handoff import Handoff, handed_over
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord, GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import UpgradeError
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import iso_utc, now_ms
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout

HANDOFF_REQUESTED = "handoff requested"
HANDED_OVER = "handed over"
HANDOFF_WITHDRAWN = "handoff rolled back"

# How often a running generation looks for a request, and a bounded one at its checkpoint:
# a ledger query or a file read, against a trigger of seconds.
_EVERY_S = 2.0


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
    # Refused, the old generation goes on as before until a rollback: still its code's.
    if handoff is None or handoff.completed_at_ms is not None:
        return current
    old = store.generation(pipeline, plan.from_generation)
    if old is None or old.status is GenerationStatus.RETIRED or not old.signature:
        return current
    # With the Spark installed here: an upgrade may be one of Spark itself.
    layout = GenerationLayout(absolute_uri(settings.pipeline.root), old.generation)
    signature = derive_signature(settings, layout)
    verdict = advise(old.signature, signature.to_json()).verdict
    return current if verdict is Verdict.NEEDS_NEW_CHECKPOINT else old.generation


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


def record_handoff(store: OffsetStore, successor: Successor, handoff: Handoff) -> Successor:
    """Write ``handoff`` into the successor's plan, on its record as stored now: the new
    generation's run writes that record too (its status, its signature, its plan consumed)."""
    stored = store.generation(successor.record.pipeline, successor.record.generation)
    record = successor.record if stored is None or stored.plan is None else stored
    plan = replace(
        successor.plan if record.plan is None else UpgradePlan.from_json(record.plan),
        handoff=handoff,
    )
    record = replace(record, plan=plan.to_json(), updated_at_ms=now_ms())
    store.record_generation(record)
    return Successor(record, plan)


class HandoffWaitError(UpgradeError):
    """The new generation cannot start: the old one refused C, or did not answer in time."""


# How long the new generation's run waits for the old one to answer. Its run answers within
# a batch and a poll; a longer wait means it is not running.
_ANSWER_TIMEOUT_S = 600.0


def wait_for_handoff(
    store: OffsetStore,
    record: GenerationRecord | None,
    *,
    echo: Callable[[str], None],
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
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(_EVERY_S / 4)
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
        "version's `run` answers at once), or go back with `upgrade rollback`"
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
    """Calls at most once per ``_EVERY_S``; in between, the last answer."""

    def __init__(self) -> None:
        self._next = 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + _EVERY_S
        return True


class HandoffRequested:
    """The supervisor's interrupt while a generation runs unbounded: a plan asks it for C.

    Only a plan already applied counts: one still being applied may be rolled back.
    """

    def __init__(self, store: OffsetStore, pipeline: str, generation: int) -> None:
        self._store, self._pipeline, self._generation = store, pipeline, generation
        self._every = _Every()

    def __call__(self) -> str | None:
        if not self._every.due():
            return None
        successor = successor_of(self._store, self._pipeline, self._generation)
        if successor is None or successor.plan.applied_at_ms is None:
            return None
        return HANDOFF_REQUESTED if successor.handoff.pending else None


def take_handoff(store: OffsetStore, layout: GenerationLayout, successor: Successor) -> Successor:
    """Answer the request, with the queries stopped: acknowledged while the last batch the
    checkpoint holds (a table may have committed one the checkpoint has only planned) ran with
    a watermark below C, refused otherwise. Answered once: a later call keeps the answer."""
    if not successor.handoff.pending:
        return successor
    aggregates = _read(layout.checkpoint)
    offsets = {} if aggregates is None else aggregates.offsets
    planned = max(offsets) if offsets else None
    # Spark's watermark before any batch is 0: below any C.
    watermark = 0 if planned is None else offsets[planned].batch_watermark_ms
    quarantine = _read(layout.quarantine_checkpoint)
    last = None if quarantine is None else quarantine.last_committed
    ended = None if last is None else last.kafka_offsets
    answered = successor.handoff.acknowledge(
        batch_id=planned,
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
        self._every = _Every()

    def __call__(self) -> str | None:
        if not self._every.due():
            return None
        layout = self._layout
        if successor_of(self._store, self._pipeline, layout.generation) is None:
            return HANDOFF_WITHDRAWN
        state = _read(layout.checkpoint)
        watermark = None if state is None else state.watermark_ms
        return HANDED_OVER if handed_over(self._boundary, watermark) else None


def complete_handoff(
    store: OffsetStore, pipeline: str, generation: int, successor: Successor
) -> None:
    """Retire the old generation, then say so in the plan; each step a no-op when done."""
    now = now_ms()
    store.set_generation_status(pipeline, generation, GenerationStatus.RETIRED, at_ms=now)
    if successor.handoff.completed_at_ms is None:
        record_handoff(store, successor, successor.handoff.complete(now))


def _read(checkpoint: str) -> CheckpointState | None:
    try:
        return read_checkpoint(checkpoint)
    except CheckpointError:
        return None  # no batch yet
