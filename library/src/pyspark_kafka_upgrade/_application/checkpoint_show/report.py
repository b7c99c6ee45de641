"""Use case: say what a checkpoint committed, and whether the sink and the ledger agree.

The checkpoint is the truth (DESIGN, "Checkpoint truth"); the ledger is checked against it.
Spark keeps only the newest offsets and commit files (``minBatchesToRetain``, 100 by
default), so offsets and watermarks are compared only for batches whose files still exist,
and the report says how many those were. Every batch from 0 to the last commit did commit,
files or not, so a ledger without one of them is missing it.

The sink's committed files are checked against its log through ``storage``
(``sink.integrity``): one that is gone or has another size is named, one line each. A sink
log this user may not read stops the report with one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pyspark_kafka_upgrade._adapters.checkpoint.reader import CheckpointState, read_checkpoint
from pyspark_kafka_upgrade._adapters.sink.integrity import check_generation, read_generation_log
from pyspark_kafka_upgrade._core.formats.offset_log import SourceOffset
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile
from pyspark_kafka_upgrade._domain.records.ledger import BatchRecord, LedgerGap
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import iso_utc
from pyspark_kafka_upgrade._domain.values.json_record import JsonRecord
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
    "render_report",
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
    """What the sink's ``_spark_metadata`` says, next to the checkpoint."""

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
    sink_uri: str | None,
    ledger: OffsetStore | None,
    pipeline: str,
    generation: int,
) -> CheckpointReport:
    """Read the checkpoint (and the sink's log, and check its committed files) and compare
    the ledger's records with it."""
    state = read_checkpoint(checkpoint_uri)
    last = state.last_committed_batch
    sink = None
    if sink_uri is not None:
        log = read_generation_log(generation, sink_uri)
        sink = SinkSummary(
            uri=sink_uri,
            batches=batch_ranges(log.batch_ids),
            last_batch_id=log.last_batch_id,
            compact_batch_id=log.compact_batch_id,
            live_files=len(log.files),
            last_batch_matches_checkpoint=log.last_batch_id == last,
            damaged=check_generation(generation, sink_uri, log=log).damaged,
        )
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
        sink=sink,
        ledger=agreement,
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


def render_report(report: CheckpointReport, *, as_json: bool) -> str:
    """The report as indented JSON (the same facts, stable keys) or as text for people."""
    if as_json:
        return json.dumps(report.to_json(), indent=2)
    fields: list[tuple[str, str]] = [
        ("checkpoint", report.checkpoint),
        ("pipeline", f"{report.pipeline}, generation {report.generation}"),
        ("query id", report.query_id or "unknown (no metadata file)"),
    ]
    fields += _last_committed_fields(report)
    fields.append(("planned, not committed", _ids(report.planned_not_committed)))
    fields.append(("retained batches", _ranges(report.retained_batches)))
    if report.sink is not None:
        fields += _sink_fields(report.sink)
    fields += _ledger_fields(report.ledger)
    width = max(len(name) for name, _ in fields)
    lines = [f"{name:<{width}}  {value}" for name, value in fields]
    return "\n".join([*lines, "", *_sentences(report)])


def _last_committed_fields(report: CheckpointReport) -> list[tuple[str, str]]:
    batch = report.last_committed
    if batch is None:
        return [("last committed batch", "none")]
    fields = [("last committed batch", str(batch.batch_id))]
    if batch.batch_watermark_ms is None:
        fields.append(("  watermark (W)", f"unknown: offsets/{batch.batch_id} is gone"))
    else:
        fields.append(("  watermark (W)", _watermark(batch.batch_watermark_ms)))
    if batch.batch_timestamp_ms is not None:
        fields.append(("  batch timestamp", _time(batch.batch_timestamp_ms)))
    fields.append(("  next batch watermark", _watermark(batch.next_batch_watermark_ms)))
    for source in batch.sources:
        kind = "" if source.is_kafka or source.offsets is None else " (not Kafka)"
        fields.append((f"  offsets of source {source.source_id}", f"{source.offsets or '-'}{kind}"))
    return fields


def _sink_fields(sink: SinkSummary) -> list[tuple[str, str]]:
    compacted = "" if sink.compact_batch_id is None else f" (compacted at {sink.compact_batch_id})"
    if sink.last_batch_matches_checkpoint:
        last = f"{_optional(sink.last_batch_id)}, as in the checkpoint"
    else:
        last = f"{_optional(sink.last_batch_id)}, not the checkpoint's last committed batch"
    damaged = f", {len(sink.damaged)} damaged" if sink.damaged else ""
    return [
        ("sink", sink.uri),
        ("  log batches", _ranges(sink.batches) + compacted),
        ("  live files", f"{sink.live_files}{damaged}"),
        ("  last batch", last),
    ]


def _ledger_fields(ledger: LedgerAgreement) -> list[tuple[str, str]]:
    if ledger.verdict is Verdict.NO_LEDGER:
        return [("ledger", "none given")]
    fields = [
        ("ledger", ledger.store or ""),
        ("  verdict", ledger.verdict.value.replace("_", " ")),
        ("  last recorded batch", _optional(ledger.last_batch_id)),
        ("  compared batches", str(ledger.compared_batches)),
        ("  missing batches", _ranges(ledger.missing_batches)),
        ("  batches ahead", _ranges(ledger.ahead_batches)),
    ]
    for mismatch in ledger.mismatches:
        fields.append(
            (
                f"  batch {mismatch.batch_id} {mismatch.field}",
                f"checkpoint {_optional(mismatch.checkpoint)}, ledger {mismatch.ledger}",
            )
        )
    for gap in ledger.gaps:
        about = "" if gap.batch_id is None else f"batch {gap.batch_id}: "
        fields.append(("  gap", f"{about}{gap.reason} (at {_time(gap.recorded_at_ms)})"))
    return fields


def _sentences(report: CheckpointReport) -> list[str]:
    sentences = []
    batch = report.last_committed
    if batch is None:
        sentences.append("The checkpoint has no committed batch yet.")
    elif batch.batch_watermark_ms is None:
        sentences.append(
            f"Batch {batch.batch_id} is the last committed one, but its offsets file is gone, "
            "so W is unknown."
        )
    else:
        sentences.append(
            f"Batch {batch.batch_id} is the last committed one; it ran with watermark "
            f"W = {batch.batch_watermark_ms} ms."
        )
    if report.planned_not_committed:
        sentences.append(
            f"Batch {_ids(report.planned_not_committed)} was planned but not committed; "
            "a restart runs it again."
        )
    if report.sink is not None and not report.sink.last_batch_matches_checkpoint:
        sentences.append(
            f"The sink's last batch is {_optional(report.sink.last_batch_id)}, the checkpoint's "
            f"is {_optional(None if batch is None else batch.batch_id)}."
        )
    if report.sink is not None:
        # One line each, as every command says them: which file, what happened, what to do.
        sentences += [_sentence(file.message()) for file in report.sink.damaged]
    sentences.append(_verdict_sentence(report.ledger))
    if report.ledger.gaps:
        sentences.append(f"The ledger recorded {len(report.ledger.gaps)} failed write(s).")
    return sentences


def _sentence(line: str) -> str:
    return f"{line[:1].upper()}{line[1:]}."


def _verdict_sentence(ledger: LedgerAgreement) -> str:
    compared = f"{ledger.compared_batches} batch(es) compared"
    if ledger.verdict is Verdict.NO_LEDGER:
        return "No ledger was given, so only the checkpoint was read."
    if ledger.verdict is Verdict.DISAGREES:
        batches = sorted({mismatch.batch_id for mismatch in ledger.mismatches})
        return (
            f"The ledger disagrees with the checkpoint on batch(es) {_ids(batches)} ({compared})."
        )
    if ledger.verdict is Verdict.LEDGER_AHEAD:
        return (
            f"The ledger is ahead: it records batch(es) {_ranges(ledger.ahead_batches)} that "
            f"the checkpoint has not committed ({compared})."
        )
    if ledger.verdict is Verdict.LEDGER_BEHIND:
        return (
            f"The ledger is behind: committed batch(es) {_ranges(ledger.missing_batches)} are "
            f"missing from it ({compared})."
        )
    return f"The ledger agrees with the checkpoint ({compared})."


def _watermark(ms: int) -> str:
    # Spark's watermark is 0 until a batch with events moves it.
    return "0 ms (not yet set)" if ms <= 0 else _time(ms)


def _time(ms: int) -> str:
    return f"{ms} ms ({iso_utc(ms)})"


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids)) if ids else "none"


def _ranges(ranges: Sequence[BatchRange]) -> str:
    return ", ".join(map(str, ranges)) if ranges else "none"


def _optional(value: object) -> str:
    return "none" if value is None else str(value)
