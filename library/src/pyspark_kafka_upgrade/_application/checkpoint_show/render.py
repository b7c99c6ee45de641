"""`checkpoint show`'s report for people (aligned fields, then sentences) or as JSON.

The facts are ``report``'s; this only words them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pyspark_kafka_upgrade._application.checkpoint_show.report import (
    BatchRange,
    CheckpointReport,
    LedgerAgreement,
    SinkSummary,
    Verdict,
)
from pyspark_kafka_upgrade._domain.values.clock import iso_utc

__all__ = ["render_report"]


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
    named = [("  table name", sink.table_name)] if sink.table_name else []
    return [
        ("sink", sink.uri),
        *named,
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
