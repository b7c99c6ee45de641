"""A handoff at a window boundary C, as the plan of the new generation records it.

    old generation ──writes every window ending at or before C──┐   stops by itself once
                                                                  │   its watermark reaches C
    new generation ──from the offsets planned for C, beside it────┴── writes every window
                                                                       ending after C

The old generation learns C by a restart on its own checkpoint, in its own run: its run sees
the plan, stops its queries between batches, and answers here once, before it writes
anything more. It acknowledges only while the last batch its checkpoint holds (committed or
only planned: a crashed table commit may be ahead of the checkpoint's) ran with a watermark
below C, because a batch writes the windows ending at or before its watermark; later batches
drop every window after C after the aggregation, so its state stays as it was. Otherwise it
refuses, and nothing was written twice. A bound read afresh for every batch would spare that
restart, but Spark's file sink has no per-batch hook to record which bound a re-run batch
used.

The record lives in the plan, which the ledger already keeps with the new generation, so the
ledger's schema is unchanged and both generations read one record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark_kafka_upgrade._domain.records.record_errors import PlanningError, UpgradeError
from pyspark_kafka_upgrade._domain.values.json_record import JsonRecord
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.windows import last_written_window_end_ms
from pyspark_kafka_upgrade._domain.values.words import watermark_text, when


class HandoffRefusedError(UpgradeError):
    """The old generation's watermark reached C before it acknowledged: it may have written
    windows after C, which the new generation would write again."""


@dataclass(frozen=True, slots=True)
class HandoffAck(JsonRecord):
    """The old generation's word, given while its queries were stopped."""

    batch_id: int | None  # the last batch its checkpoint planned then; None: none yet
    batch_watermark_ms: int  # the watermark that batch ran with: below C
    # Where its quarantine query stopped for good: the new generation's starts there, so
    # every malformed record lands in one quarantine.
    quarantine_end_offsets: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class Handoff(JsonRecord):
    """Where the handoff stands, in the order it happens."""

    boundary_ms: int  # C: the old generation owns the windows ending at or before it
    acknowledged: HandoffAck | None = None
    refused: str | None = None  # why the old generation could not take C
    # Handed over is the old generation's status, retired: written by it alone, on its own
    # record, where the new generation's run writes this one (no store compares and sets).

    def acknowledge(
        self,
        *,
        batch_id: int | None,
        batch_watermark_ms: int,
        quarantine_end_offsets: str,
        at_ms: int,
    ) -> Handoff:
        """This handoff with the old generation's answer: acknowledged when its last batch
        ran with a watermark below C, else refused, with the reason."""
        if batch_watermark_ms >= self.boundary_ms:
            batch = "no batch" if batch_id is None else f"batch {batch_id}"
            return replace(
                self,
                refused=(
                    f"the old generation's watermark ({watermark_text(batch_watermark_ms)}, "
                    f"{batch}) had reached C ({when(self.boundary_ms)}) when it took the "
                    "bound, so it may have written windows after C"
                ),
            )
        return replace(
            self,
            acknowledged=HandoffAck(batch_id, batch_watermark_ms, quarantine_end_offsets, at_ms),
        )

    @property
    def pending(self) -> bool:
        """Requested, and not yet answered by the old generation."""
        return self.acknowledged is None and self.refused is None


def handed_over(boundary_ms: int, committed_watermark_ms: int | None) -> bool:
    """Whether the old generation wrote every window it owns: a committed batch ran with a
    watermark at or after C, and such a batch writes every window ending at or before it."""
    return committed_watermark_ms is not None and committed_watermark_ms >= boundary_ms


def check_boundary(boundary_ms: int, window: WindowSpec, watermark_ms: int) -> None:
    """Refuse a C that is not a window's end, or that the old generation's watermark
    (``watermark_ms``, its last batch's) has already reached."""
    end = last_written_window_end_ms(boundary_ms, window)
    if end != boundary_ms:
        following = end + window.slide_ms
        raise PlanningError(
            f"the handoff at {when(boundary_ms)} is not the end of a window; the windows "
            f"around it end at {when(end)} and {when(following)}"
        )
    if watermark_ms >= boundary_ms:
        nearest = last_written_window_end_ms(watermark_ms, window) + window.slide_ms
        raise PlanningError(
            f"the old generation's watermark ({watermark_text(watermark_ms)}) has already "
            f"reached the handoff at {when(boundary_ms)}; choose a window end after it, "
            f"{when(nearest)} or later"
        )
