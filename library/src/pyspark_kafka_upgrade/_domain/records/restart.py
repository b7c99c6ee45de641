"""Where each partition of a new generation restarts, and why: the planner's restart records.

``planner.restart`` computes a :class:`RestartPlan` at batch level, ``planner.tightening``
narrows it per partition, ``planner.retention`` checks it against what the broker holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pyspark_kafka_upgrade._domain.records.history import EARLIEST
from pyspark_kafka_upgrade._domain.records.per_partition import ByPartition, known_total
from pyspark_kafka_upgrade._domain.records.scans import PARTITION_KEYS, TighteningSummary
from pyspark_kafka_upgrade._domain.values.json_record import Fields, JsonRecord, Shape, Written
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, format_offsets, unflatten
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.windows import earliest_open_event_ms
from pyspark_kafka_upgrade._domain.values.words import describe_window, watermark_text, when


class RestartKind(StrEnum):
    """Why a partition restarts where it does, in a word: plans group their reasons by it."""

    FIRST_FEEDING_BATCH = "first-feeding-batch"  # the start of the first batch that can feed
    NEW_PARTITION = "new-partition"  # not in that batch's start offsets: its initial offset
    NOTHING_TO_REBUILD = "nothing-to-rebuild"  # no committed batch can feed an open window
    FIRST_FEEDING_RECORD = "first-feeding-record"  # tightened to its first feeding record
    NO_FEEDING_RECORD = "no-feeding-record"  # tightened: no record in range feeds, its end
    SUBSCRIBED = "subscribed"  # newly subscribed: where the settings start new partitions
    UNSUBSCRIBED = "unsubscribed"  # no longer subscribed: not read again


@dataclass(frozen=True, slots=True)
class PartitionPlan(JsonRecord):
    """Where one partition restarts, and why."""

    json_shape = Shape(
        PARTITION_KEYS,
        "restart_offset",
        "end_offset",
        Written("records_to_replay"),
        "reason",
    )

    partition: PartitionKey
    restart_offset: int  # EARLIEST when no one recorded where the old query started it
    end_offset: int  # where the old generation's last committed batch ended
    reason: str
    kind: RestartKind

    @property
    def records_to_replay(self) -> int | None:
        """Offsets between the restart and the old end; None until EARLIEST is resolved."""
        if self.restart_offset == EARLIEST:
            return None
        return max(0, self.end_offset - self.restart_offset)


@dataclass(frozen=True, slots=True)
class RestartPlan(JsonRecord):
    """Where a new generation restarts, with the reasons, ready for JSON and for sentences."""

    json_shape = Shape(
        "last_committed_batch",
        "watermark_ms",
        Written("replay_after_ms", "watermark_ms"),
        Written("replay_filter", lambda plan: f"window.end > {plan.watermark_ms}"),
        "window",
        "earliest_open_event_ms",
        "restart_batch",
        Written("restart_offsets", "starting_offsets"),
        Written("end_offsets", lambda plan: format_offsets(unflatten(plan.end_offsets))),
        Written("records_to_replay"),
        "partitions",
        "notes",
        "data_loss",
        "tightening",
    )

    window: WindowSpec
    last_committed_batch: int
    watermark_ms: int  # W
    earliest_open_event_ms: int  # T_min
    restart_batch: int | None  # the first batch that can feed an open window; None: none
    partitions: tuple[PartitionPlan, ...]  # canonical order
    notes: tuple[str, ...] = ()
    data_loss: tuple[RetentionLoss, ...] = ()
    tightening: TighteningSummary | None = None

    restart_offsets = ByPartition[int]("restart_offset")
    end_offsets = ByPartition[int]("end_offset")
    reasons = ByPartition[str]("reason")

    @property
    def records_to_replay(self) -> int | None:
        """The replay estimate in offsets; None while a partition restarts at EARLIEST."""
        return known_total(plan.records_to_replay for plan in self.partitions)

    @property
    def starting_offsets(self) -> str:
        """The canonical offsets text for Spark's ``startingOffsets``."""
        return format_offsets(unflatten(self.restart_offsets))

    def explain(self) -> list[str]:
        """The plan as sentences: the reasoning, then each partition."""
        lines = reasoning(
            self.last_committed_batch, self.watermark_ms, self.window, self.restart_batch
        )
        for plan in self.partitions:
            topic, number = plan.partition
            offset = "earliest" if plan.restart_offset == EARLIEST else str(plan.restart_offset)
            lines.append(f"{topic} partition {number} restarts at {offset}: {plan.reason}.")
        total = self.records_to_replay
        lines.append(
            "Records to replay: unknown until the broker's earliest offsets are known."
            if total is None
            else f"Records to replay: {total}."
        )
        if self.tightening is not None and self.tightening.amplification is not None:
            lines.append(
                f"Replayed records / records that feed open windows: "
                f"{self.tightening.amplification:.3f} (batch level: "
                f"{self.tightening.batch_level_amplification or 0.0:.3f})."
            )
        lines.extend(f"Note: {note}." for note in self.notes)
        return lines


def reasoning(
    last_committed_batch: int,
    watermark_ms: int,
    window: WindowSpec,
    restart_batch: int | None,
    *,
    window_changed: bool = False,
) -> list[str]:
    """Why a restart is where it is, as sentences: W, the open windows, the first batch.

    After a window change the replay keeps events by time (from E), not windows by W."""
    lines = [
        f"The old generation's last committed batch is {last_committed_batch}; it ran with "
        f"watermark W = {watermark_text(watermark_ms)}, so it wrote every window ending at or "
        "before W.",
        f"Windows ending after W ({describe_window(window)}) were still open and must be "
        f"rebuilt: they hold events from {when(earliest_open_event_ms(watermark_ms, window))} "
        "on.",
    ]
    if restart_batch is None:
        lines.append("No committed batch can feed an open window: nothing to rebuild.")
    else:
        kept = (
            "keeps the events from E on (below)"
            if window_changed
            else "drops every window ending at or before W"
        )
        lines.append(
            f"Batch {restart_batch} is the first that can feed an open window; the replay "
            f"starts there and {kept}."
        )
    return lines


@dataclass(frozen=True, slots=True)
class RetentionLoss(JsonRecord):
    """Records a restart needs that the broker has already deleted."""

    json_shape = Shape(PARTITION_KEYS, Fields(), Written("lost_records"))

    partition: PartitionKey
    needed_offset: int
    earliest_available: int

    @property
    def lost_records(self) -> int:
        return self.earliest_available - self.needed_offset

    def describe(self) -> str:
        topic, number = self.partition
        return (
            f"topic {topic} partition {number} needs offset {self.needed_offset}, the earliest "
            f"available is {self.earliest_available} ({self.lost_records} records lost)"
        )
