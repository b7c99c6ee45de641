"""Restart offsets against what the broker still holds: refuse a silent loss."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from pyspark_kafka_upgrade._domain.records.history import EARLIEST, FlatOffsets
from pyspark_kafka_upgrade._domain.records.record_errors import (
    InconsistentInputsError,
    PlanningError,
)
from pyspark_kafka_upgrade._domain.records.restart import PartitionPlan, RestartPlan, RetentionLoss


class OffsetsOutOfRetentionError(PlanningError):
    """Restart offsets below the broker's earliest available offsets: data already deleted."""

    def __init__(self, losses: Iterable[RetentionLoss]) -> None:
        self.losses = tuple(losses)
        total = sum(loss.lost_records for loss in self.losses)
        super().__init__(
            "the restart needs records the broker has already deleted (retention): "
            + "; ".join(loss.describe() for loss in self.losses)
            + f". They are {total} records from the first batch that can feed a window still "
            "open on; deleted records cannot be read, so which of them fed open windows is "
            "unknown. Accept the loss (--accept-data-loss) to restart at the earliest "
            "available offsets instead"
        )


def check_retention(
    plan: RestartPlan,
    earliest_available: FlatOffsets,
    *,
    accept_data_loss: bool = False,
) -> RestartPlan:
    """Check the restart offsets against the broker's earliest available offsets.

    EARLIEST is resolved to the broker's earliest offset. An offset below the earliest is
    refused with OffsetsOutOfRetentionError unless ``accept_data_loss``: then the partition
    moves up to the earliest available offset and its reason and ``data_loss`` say so.

    It runs before ``tighten`` on purpose. Tightening reads each record's event time, and a
    deleted record cannot be read: whether it fed an open window is unknown, so the
    batch-level restart is the most the planner can vouch for, and anything deleted after
    it counts as lost.
    """
    unknown = [
        each.partition for each in plan.partitions if each.partition not in earliest_available
    ]
    if unknown:
        listing = ", ".join(f"{topic} partition {number}" for topic, number in unknown)
        raise InconsistentInputsError(
            f"the broker reports no earliest offset for {listing}, which the plan restarts; "
            "is the topic still there?"
        )
    losses: list[RetentionLoss] = []
    partitions: list[PartitionPlan] = []
    notes = list(plan.notes)
    for each in plan.partitions:
        earliest = earliest_available[each.partition]
        if each.restart_offset == EARLIEST:
            partitions.append(
                replace(
                    each,
                    restart_offset=earliest,
                    reason=f"{each.reason}; the broker's earliest available offset is {earliest}",
                )
            )
            notes.append(
                f"{each.partition[0]} partition {each.partition[1]} restarts at the broker's "
                "earliest offset; records retention deleted since the old query started it "
                "cannot be counted"
            )
        elif each.restart_offset < earliest:
            loss = RetentionLoss(each.partition, each.restart_offset, earliest)
            losses.append(loss)
            partitions.append(
                replace(
                    each,
                    restart_offset=earliest,
                    reason=f"{each.reason}; moved up to the earliest available offset "
                    f"{earliest}: offsets {each.restart_offset}-{earliest - 1} were deleted "
                    f"by retention, {loss.lost_records} records lost (accepted)",
                )
            )
        else:
            partitions.append(each)
    if losses and not accept_data_loss:
        raise OffsetsOutOfRetentionError(losses)
    if losses:
        total = sum(loss.lost_records for loss in losses)
        notes.append(f"data loss accepted: {total} records deleted by retention are not replayed")
    return replace(
        plan,
        partitions=tuple(partitions),
        notes=tuple(notes),
        data_loss=plan.data_loss + tuple(losses),
    )
