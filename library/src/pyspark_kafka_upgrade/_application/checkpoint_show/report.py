"""Use case: say what a checkpoint committed, and whether the sink and the ledger agree.

The checkpoint is the truth (DESIGN, "Checkpoint truth"); the ledger is checked against it.
Spark keeps only the newest offsets and commit files (``minBatchesToRetain``, 100 by
default), so offsets and watermarks are compared only for batches whose files still exist,
and the report says how many those were. Every batch from 0 to the last commit did commit,
files or not, so a ledger without one of them is missing it.

What the sink committed comes through its ``Sink``, which checks the committed files against
its log: one that is gone or has another size is named, one line each. A sink log this user
may not read stops the report with one line. The words are ``render``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pyspark_kafka_upgrade._adapters.checkpoint.reader import CheckpointState, read_checkpoint
from pyspark_kafka_upgrade._core.formats.offset_log import SourceOffset
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile, Part
from pyspark_kafka_upgrade._domain.records.ledger import BatchRecord, LedgerGap
from pyspark_kafka_upgrade._domain.records.sink import Sink
from pyspark_kafka_upgrade._domain.records.sink_errors import IntegrityError
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.json_record import Field, Group, JsonRecord, Shape
from pyspark_kafka_upgrade._domain.values.offsets import (
    InvalidOffsetsError,
    format_offsets,
    parse_offsets,
)

__all__ = [
    "BatchRange",
    "CheckpointReport",
    "GapNote",
    "LastCommittedBatch",
    "LedgerAgreement",
    "Mismatch",
    "SinkSummary",
    "Verdict",
    "batch_ranges",
    "compare_ledger",
    "inspect_checkpoint",
]


class Verdict(StrEnum):
    """How the ledger relates to the checkpoint, most serious first."""

    DISAGREES = "disagrees"  # a batch both know has other offsets, watermark or query id
    LEDGER_AHEAD = "ledger_ahead"  # the ledger has batches the checkpoint never committed
    LEDGER_BEHIND = "ledger_behind"  # committed batches are missing from the ledger
    AGREES = "agrees"
    NO_LEDGER = "no_ledger"


@dataclass(frozen=True, slots=True)
class BatchRange(JsonRecord):
    """Batch ids ``first`` to ``last``, both included."""

    first: int
    last: int

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"


@dataclass(frozen=True, slots=True)
class LastCommittedBatch(JsonRecord):
    """The last batch with ``commits/N``, and what ``offsets/N`` says about it."""

    batch_id: int
    log_version: int | None  # of offsets/N; None when that file is gone
    batch_watermark_ms: int | None  # W, the restart reference; None when offsets/N is gone
    batch_timestamp_ms: int | None
    next_batch_watermark_ms: int  # from commits/N: what the next batch would run with
    sources: tuple[SourceOffset, ...]


@dataclass(frozen=True, slots=True)
class SinkSummary(JsonRecord):
    """What the sink's log says, next to the checkpoint."""

    uri: str
    batches: tuple[BatchRange, ...]  # batches whose log file is still present
    last_batch_id: int | None
    compact_batch_id: int | None
    live_files: int
    # The sink commits batch N before commits/N is written, so it may be one ahead after a
    # crash; a restart then skips writing that batch again.
    last_batch_matches_checkpoint: bool
    # Committed files missing or of another size, or directories that cannot be listed.
    damaged: tuple[DamagedFile, ...] = ()
    # The table's catalog name (sink.table_name), if any: written only then, so that a file
    # sink's document is unchanged.
    table_name: str | None = None

    json_shape = Shape(
        "uri",
        Group("table", Field("table_name", key="name"), optional=True),
        "batches",
        "last_batch_id",
        "compact_batch_id",
        "live_files",
        "last_batch_matches_checkpoint",
        "damaged",
    )


@dataclass(frozen=True, slots=True)
class Mismatch(JsonRecord):
    """One fact of one batch on which the ledger and the checkpoint differ."""

    batch_id: int
    field: str  # "end_offsets", "batch_watermark_ms" or "query_id"
    checkpoint: str | None
    ledger: str


@dataclass(frozen=True, slots=True)
class GapNote(JsonRecord):
    """A write the ledger recorded as failed."""

    batch_id: int | None  # None when the failed write was not about one batch
    reason: str
    recorded_at_ms: int


@dataclass(frozen=True, slots=True)
class LedgerAgreement(JsonRecord):
    """The ledger's batch records of one generation, compared with the checkpoint."""

    verdict: Verdict
    store: str | None  # the ledger's description; None without a ledger
    last_batch_id: int | None  # the ledger's last batch of this generation
    same_last_batch: bool | None  # None without a ledger
    compared_batches: int  # batches in both, with offsets and commits files still present
    missing_batches: tuple[BatchRange, ...]  # committed, absent from the ledger
    ahead_batches: tuple[BatchRange, ...]  # in the ledger, not committed by the checkpoint
    mismatches: tuple[Mismatch, ...]
    gaps: tuple[GapNote, ...]


@dataclass(frozen=True, slots=True)
class CheckpointReport(JsonRecord):
    """Everything ``inspect`` says about one generation's checkpoint."""

    checkpoint: str
    pipeline: str
    generation: int
    query_id: str | None
    last_committed: LastCommittedBatch | None  # None before the first commit
    planned_not_committed: tuple[int, ...]  # offsets/N written, the batch not committed
    retained_batches: tuple[BatchRange, ...]  # committed, offsets and commit files present
    sink: SinkSummary | None  # None when no sink was given
    ledger: LedgerAgreement


def inspect_checkpoint(
    checkpoint_uri: str,
    *,
    sink: Sink | None,
    ledger: OffsetStore | None,
    pipeline: str,
    generation: int,
) -> CheckpointReport:
    """Read the checkpoint (and what ``sink`` says ``generation`` committed, with its
    damaged files) and compare the ledger's records with it."""
    state = read_checkpoint(checkpoint_uri)
    summary = None if sink is None else _sink_summary(sink, generation, state)
    if ledger is None:
        agreement = _no_ledger()
    else:
        agreement = compare_ledger(
            state,
            ledger.batches(pipeline, generation),
            ledger.gaps(pipeline, generation),
            store=ledger.describe(),
        )
    return CheckpointReport(
        checkpoint=checkpoint_uri,
        pipeline=pipeline,
        generation=generation,
        query_id=state.query_id,
        last_committed=_last_committed(state),
        planned_not_committed=state.planned_not_committed,
        retained_batches=batch_ranges(state.retained_batches),
        sink=summary,
        ledger=agreement,
    )


def _sink_summary(sink: Sink, generation: int, state: CheckpointState) -> SinkSummary:
    output = sink.output(generation)
    unreadable = [file for file in output.damaged if file.part is Part.SINK_LOG]
    if unreadable:
        # Without its log, nothing about the sink can be said: one line, not a report.
        raise IntegrityError(unreadable)
    return SinkSummary(
        uri=output.location,
        batches=batch_ranges(output.batch_ids),
        last_batch_id=output.last_batch_id,
        compact_batch_id=output.compact_batch_id,
        live_files=output.live_files,
        last_batch_matches_checkpoint=output.last_batch_id == state.last_committed_batch,
        damaged=output.damaged,
    )


def compare_ledger(
    state: CheckpointState,
    records: Sequence[BatchRecord],
    gaps: Sequence[LedgerGap],
    *,
    store: str,
) -> LedgerAgreement:
    """Compare one generation's ledger records and gap markers with its checkpoint."""
    last = state.last_committed_batch
    by_batch = {record.batch_id: record for record in records}
    committed = range(0 if last is None else last + 1)
    missing = [batch for batch in committed if batch not in by_batch]
    ahead = sorted(batch for batch in by_batch if last is None or batch > last)
    compared = [batch for batch in state.retained_batches if batch in by_batch]
    mismatches = [
        mismatch for batch in compared for mismatch in _mismatches(state, by_batch[batch])
    ]
    if mismatches:
        verdict = Verdict.DISAGREES
    elif ahead:
        verdict = Verdict.LEDGER_AHEAD
    elif missing:
        verdict = Verdict.LEDGER_BEHIND
    else:
        verdict = Verdict.AGREES
    ledger_last = max(by_batch) if by_batch else None
    return LedgerAgreement(
        verdict=verdict,
        store=store,
        last_batch_id=ledger_last,
        same_last_batch=ledger_last == last,
        compared_batches=len(compared),
        missing_batches=batch_ranges(missing),
        ahead_batches=batch_ranges(ahead),
        mismatches=tuple(mismatches),
        gaps=tuple(GapNote(gap.batch_id, gap.reason, gap.recorded_at_ms) for gap in gaps),
    )


def batch_ranges(batch_ids: Iterable[int]) -> tuple[BatchRange, ...]:
    """Ascending ids as runs of consecutive ids: a ledger far behind stays one short line."""
    ranges: list[BatchRange] = []
    for batch in sorted(batch_ids):
        if ranges and batch == ranges[-1].last + 1:
            ranges[-1] = BatchRange(ranges[-1].first, batch)
        else:
            ranges.append(BatchRange(batch, batch))
    return tuple(ranges)


def _mismatches(state: CheckpointState, record: BatchRecord) -> list[Mismatch]:
    batch = record.batch_id
    entry = state.offsets[batch]
    found = []
    if state.query_id is not None and record.query_id != state.query_id:
        found.append(Mismatch(batch, "query_id", state.query_id, record.query_id))
    checkpoint_offsets = entry.kafka_offsets
    # Offsets that are not Kafka's on either side never agree: there is nothing to compare.
    ledger_offsets = _canonical(record.end_offsets)
    if checkpoint_offsets is None or ledger_offsets != checkpoint_offsets:
        found.append(Mismatch(batch, "end_offsets", checkpoint_offsets, record.end_offsets))
    if record.batch_watermark_ms != entry.batch_watermark_ms:
        found.append(
            Mismatch(
                batch,
                "batch_watermark_ms",
                str(entry.batch_watermark_ms),
                str(record.batch_watermark_ms),
            )
        )
    return found


def _canonical(offsets: str) -> str | None:
    # The ledger may hold the Python source's json.dumps spacing; only the parsed value counts.
    try:
        return format_offsets(parse_offsets(offsets))
    except InvalidOffsetsError:
        return None


def _last_committed(state: CheckpointState) -> LastCommittedBatch | None:
    last = state.last_committed_batch
    if last is None:
        return None
    entry = state.last_committed
    return LastCommittedBatch(
        batch_id=last,
        log_version=None if entry is None else entry.log_version,
        batch_watermark_ms=None if entry is None else entry.batch_watermark_ms,
        batch_timestamp_ms=None if entry is None else entry.batch_timestamp_ms,
        next_batch_watermark_ms=state.commits[last].next_batch_watermark_ms,
        sources=() if entry is None else entry.sources,
    )


def _no_ledger() -> LedgerAgreement:
    return LedgerAgreement(
        verdict=Verdict.NO_LEDGER,
        store=None,
        last_batch_id=None,
        same_last_batch=None,
        compared_batches=0,
        missing_batches=(),
        ahead_batches=(),
        mismatches=(),
        gaps=(),
    )
