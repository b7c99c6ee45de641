"""What the old generation's batches say: the ledger's facts and the checkpoint's offsets.

The application layer turns ledger records and checkpoint files into these small classes,
so the restart arithmetic never reads a store or a file.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from pyspark_kafka_upgrade._domain.records.ledger import BatchRecord
from pyspark_kafka_upgrade._domain.records.record_errors import InconsistentInputsError
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, flatten, parse_offsets

# (topic, partition) -> offset, in the flat form of ``offsets.flatten``.
FlatOffsets = Mapping[PartitionKey, int]


# Kafka's startingOffsets code for "the earliest offset the broker still has".
EARLIEST = -2


@dataclass(frozen=True, slots=True)
class BatchFacts:
    """What the ledger recorded about one committed batch of the old generation.

    A batch the ledger knows nothing about is simply not given (or is named in the gap
    markers): that is "unknown", which is not the same as both event times being None,
    "the batch had no valid event" (a no-data batch, or only malformed records).
    """

    batch_id: int
    start_offsets: FlatOffsets | None  # None: the query's first batch, or not recorded
    end_offsets: FlatOffsets
    watermark_ms: int  # batchWatermarkMs: the watermark this batch ran with
    min_event_time_ms: int | None  # over valid events, floored to the millisecond
    max_event_time_ms: int | None  # over valid events, rounded up to the millisecond
    # The run that committed it: a batch that begins a run may judge lateness by its own
    # watermark. None where nobody said.
    run_id: str | None = None

    @classmethod
    def from_record(cls, batch: BatchRecord) -> BatchFacts:
        """The facts of one ledger record."""
        return cls(
            batch_id=batch.batch_id,
            start_offsets=None
            if batch.start_offsets is None
            else flat_offsets(batch.start_offsets),
            end_offsets=flat_offsets(batch.end_offsets),
            watermark_ms=batch.batch_watermark_ms,
            min_event_time_ms=batch.min_event_time_ms,
            max_event_time_ms=batch.max_event_time_ms,
            run_id=batch.run_id,
        )

    def __post_init__(self) -> None:
        if (self.min_event_time_ms is None) != (self.max_event_time_ms is None):
            raise InconsistentInputsError(
                f"ledger batch {self.batch_id} has only one of its min and max event times"
            )
        if (
            self.min_event_time_ms is not None
            and self.max_event_time_ms is not None
            and self.min_event_time_ms > self.max_event_time_ms
        ):
            raise InconsistentInputsError(
                f"ledger batch {self.batch_id} has min event time {self.min_event_time_ms} "
                f"after its max {self.max_event_time_ms}"
            )


def ledger_facts(records: Iterable[BatchRecord]) -> tuple[BatchFacts, ...]:
    """Every ledger record's facts, in order.

    The cyclic GC is paused meanwhile: these objects hold no cycles, and at 100,000 batches
    its full collections, which rescan everything alive, doubled the time (make bench's
    planner.growth, profiled).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return tuple(map(BatchFacts.from_record, records))
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True, slots=True)
class CheckpointBatch:
    """One retained ``offsets/<k>`` file of a committed batch."""

    batch_id: int
    end_offsets: FlatOffsets
    watermark_ms: int  # batchWatermarkMs


@dataclass(frozen=True, slots=True)
class CheckpointFacts:
    """What the old checkpoint says: the authority on what committed.

    ``batches`` are the retained ``offsets/<k>`` files of committed batches (Spark keeps the
    last hundred or so); entries above the last commit are ignored, since they did not commit.
    """

    last_committed_batch: int | None
    batches: tuple[CheckpointBatch, ...] = ()
    next_watermark_ms: int | None = None  # nextBatchWatermarkMs of commits/N, if known

    @property
    def watermark_ms(self) -> int | None:
        """W from ``offsets/N``, N the last committed batch; None when that file is gone."""
        for batch in self.batches:
            if batch.batch_id == self.last_committed_batch:
                return batch.watermark_ms
        return None


@lru_cache(maxsize=256)
def flat_offsets(text: str) -> FlatOffsets:
    """Offsets JSON text in the planner's flat form, read-only; for building BatchFacts.

    Cached, because a batch's start offsets are the text of the batch before's end, and
    quick on well-formed text, since a long ledger holds two texts per batch. Anything else
    goes through ``offsets.parse_offsets``, whose errors explain the expected form.
    """
    quick = _well_formed_flat(text)
    return MappingProxyType(quick if quick is not None else flatten(parse_offsets(text)))


def _well_formed_flat(text: str) -> dict[PartitionKey, int] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if type(value) is not dict:
        return None
    flat: dict[PartitionKey, int] = {}
    for topic, partitions in value.items():
        if type(partitions) is not dict:
            return None
        for partition, offset in partitions.items():
            # type() rather than isinstance(): JSON true is no offset.
            if type(offset) is not int or not (partition.isdecimal() and partition.isascii()):
                return None
            flat[(topic, int(partition))] = offset
    return flat
