"""What the old generation left of its batches, read for the restart: the ledger's records
and the checkpoint's retained ``offsets/<k>`` files, W and the final end offsets, and each
batch's offsets checked to go only forward.

When the ledger and the checkpoint both know a boundary and disagree, the smaller offset
wins (it replays more) and the plan says so; ``restart`` decides where the replay begins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pyspark_kafka_upgrade._domain.records.history import (
    BatchFacts,
    CheckpointBatch,
    CheckpointFacts,
    FlatOffsets,
)
from pyspark_kafka_upgrade._domain.records.record_errors import (
    InconsistentInputsError,
    LedgerAheadError,
    NoCommittedBatchError,
    UnknownWatermarkError,
)
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, format_offsets, unflatten


@dataclass(frozen=True, slots=True)
class Boundary:
    """Offsets known at the end of one batch, and where they come from."""

    batch_id: int
    offsets: FlatOffsets
    in_checkpoint: bool
    in_ledger: bool

    @property
    def source(self) -> str:
        # Built only for a reason or an error: the planner makes one boundary per batch.
        if self.in_checkpoint:
            return f"checkpoint offsets/{self.batch_id}"
        return f"ledger batch {self.batch_id}" if self.in_ledger else f"batch {self.batch_id}"


@dataclass(frozen=True, slots=True)
class OldBatches:
    """What the old generation left of its batches 0 to ``last``."""

    last: int
    checkpoint: CheckpointFacts
    records: Mapping[int, BatchFacts]  # the ledger's, by batch id
    retained: Mapping[int, CheckpointBatch]  # the checkpoint's offsets/<k> files still there
    gaps: frozenset[int]  # ledger gap markers: their records, if any, are not trusted
    ledger_top: int  # the ledger's latest batch; -1: none

    @classmethod
    def of(
        cls, checkpoint: CheckpointFacts, ledger: Iterable[BatchFacts], gaps: frozenset[int]
    ) -> OldBatches:
        last = checkpoint.last_committed_batch
        if last is None:
            raise NoCommittedBatchError(
                "the old checkpoint has no committed batch (no commits/<n> file), so there is "
                "nothing to upgrade from: start the new generation from its configured offsets"
            )
        records = _index_ledger(ledger, last, gaps)
        retained = {batch.batch_id: batch for batch in checkpoint.batches if batch.batch_id <= last}
        return cls(last, checkpoint, records, retained, gaps, max(records, default=-1))

    def record(self, batch_id: int) -> BatchFacts | None:
        """The ledger's record of a batch, when there is one to trust."""
        return None if batch_id in self.gaps else self.records.get(batch_id)


def _index_ledger(
    ledger: Iterable[BatchFacts], last: int, gaps: frozenset[int]
) -> dict[int, BatchFacts]:
    records: dict[int, BatchFacts] = {}
    for facts in ledger:
        if facts.batch_id < 0:
            raise InconsistentInputsError(f"the ledger holds a batch with id {facts.batch_id}")
        kept = records.setdefault(facts.batch_id, facts)
        if kept is not facts and kept != facts:
            raise InconsistentInputsError(
                f"the ledger holds two different records of batch {facts.batch_id}"
            )
    ahead = max([*records, *gaps], default=-1)
    if ahead > last:
        raise LedgerAheadError(
            f"the ledger records batch {ahead} but the checkpoint's last committed batch is "
            f"{last}: the ledger is ahead of the checkpoint, so it describes another "
            "checkpoint, or this checkpoint lost commits. Check that the checkpoint path "
            "belongs to this pipeline and generation; the planner will not guess"
        )
    return records


def watermark_and_end(batches: OldBatches, notes: list[str]) -> tuple[int, dict[PartitionKey, int]]:
    """W and the end offsets of the last committed batch: the checkpoint's, if it has them."""
    last = batches.last
    in_checkpoint = batches.retained.get(last)
    in_ledger = batches.record(last)
    if in_checkpoint is not None:
        if in_ledger is not None and in_ledger.watermark_ms != in_checkpoint.watermark_ms:
            notes.append(
                f"the ledger gives batch {last} watermark {in_ledger.watermark_ms} ms, the "
                f"checkpoint {in_checkpoint.watermark_ms} ms; the checkpoint decides"
            )
        return in_checkpoint.watermark_ms, dict(in_checkpoint.end_offsets)
    if in_ledger is not None:
        notes.append(
            f"the checkpoint no longer holds offsets/{last}; W and the final end offsets come "
            "from the ledger's record of that batch"
        )
        return in_ledger.watermark_ms, dict(in_ledger.end_offsets)
    raise UnknownWatermarkError(
        f"W is unknown: the checkpoint's offsets/{last} (the last committed batch) is gone "
        f"and the ledger has no trustworthy record of batch {last}. Without W the planner "
        "cannot tell written windows from open ones"
    )


def start_offsets(
    batch_id: int, record: BatchFacts | None, boundary: Boundary | None, notes: list[str]
) -> FlatOffsets | None:
    """The start offsets of a batch where the ledger states them, checked against the end of
    the batch before; None when the ledger does not state them."""
    if record is None or record.start_offsets is None:
        return None
    start = record.start_offsets
    if boundary is not None and boundary.batch_id == batch_id - 1 and start != boundary.offsets:
        source = boundary.source
        _refuse_backwards(
            batch_id,
            "starts",
            boundary.offsets,
            start,
            lambda offset: f"the end of batch {batch_id - 1} ({offset}, {source})",
        )
        for key, offset in boundary.offsets.items():
            begun = start.get(key)
            if begun is not None and begun > offset:
                notes.append(
                    f"batch {batch_id} starts {key[0]} partition {key[1]} at {begun}, after "
                    f"the end of batch {batch_id - 1} ({offset}): the old query skipped those "
                    "records; the restart uses the smaller offset"
                )
    return start


def end_offsets(
    batch_id: int,
    record: BatchFacts | None,
    retained: CheckpointBatch | None,
    notes: list[str],
) -> FlatOffsets | None:
    """A batch's end offsets from the ledger and the checkpoint; the smaller where they differ."""
    if retained is None:
        return None if record is None else record.end_offsets
    if record is None or record.end_offsets == retained.end_offsets:
        return retained.end_offsets
    notes.append(
        f"the ledger and the checkpoint disagree on batch {batch_id}'s end offsets "
        f"({format_offsets(unflatten(record.end_offsets))} against "
        f"{format_offsets(unflatten(retained.end_offsets))}); the restart takes the smaller "
        "offset of each partition"
    )
    merged = dict(retained.end_offsets)
    for key, offset in record.end_offsets.items():
        merged[key] = min(offset, merged.get(key, offset))
    return merged


def check_order(
    batch_id: int, start: FlatOffsets | None, end: FlatOffsets, boundary: Boundary | None
) -> None:
    """Refuse offsets that go backwards. Linear in partitions; equal dicts compare in C."""
    restated = boundary is not None and start is not None and start == boundary.offsets
    if start is not None and not restated and start != end:
        _refuse_backwards(batch_id, "ends", start, end, lambda offset: f"its start {offset}")
    if boundary is not None and boundary.offsets is not end and boundary.offsets != end:
        before, source = boundary.batch_id, boundary.source
        _refuse_backwards(
            batch_id,
            "ends",
            boundary.offsets,
            end,
            lambda offset: f"the end of batch {before} ({offset}, {source})",
        )


def _refuse_backwards(
    batch_id: int,
    moves: str,
    earlier: FlatOffsets,
    later: FlatOffsets,
    what_before: Callable[[int], str],
) -> None:
    """Refuse the first partition that ``later`` has below ``earlier``."""
    for (topic, number), offset in earlier.items():
        moved = later.get((topic, number))
        if moved is not None and moved < offset:
            raise InconsistentInputsError(
                f"offsets go backwards: batch {batch_id} {moves} {topic} partition {number} "
                f"at {moved}, before {what_before(offset)}"
            )


def next_watermark(batch_id: int, batches: OldBatches) -> int | None:
    """The watermark of the batch after ``batch_id``, which bounds ``batch_id``'s events."""
    following = batch_id + 1
    if following > batches.last:
        return batches.checkpoint.next_watermark_ms
    if following in batches.retained:
        return batches.retained[following].watermark_ms
    record = batches.record(following)
    return None if record is None else record.watermark_ms
