"""The ledger's records and their JSON form.

Offsets are kept as the canonical offsets JSON text (topics sorted, partitions in numeric
order, exactly as Spark's Kafka source writes it), so they compare and round-trip as strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum

from pyspark_kafka_upgrade._domain.records.ledger_errors import LedgerRecordError
from pyspark_kafka_upgrade._domain.values.json_record import JsonRecord, Shape

JsonObject = Mapping[str, object]


class GenerationStatus(StrEnum):
    """Where a generation is in its life."""

    PLANNED = "planned"
    RUNNING = "running"
    RETIRED = "retired"


@dataclass(frozen=True, slots=True)
class BatchRecord(JsonRecord):
    """One committed micro-batch, keyed by (pipeline, generation, batch_id)."""

    json_shape = Shape(what="batch record", error=LedgerRecordError)

    pipeline: str
    generation: int
    batch_id: int
    query_id: str
    run_id: str
    batch_timestamp_ms: int
    start_offsets: str | None  # None for a query's first batch
    end_offsets: str
    batch_watermark_ms: int  # the watermark this batch ran with, W for a restart
    input_rows: int
    min_event_time_ms: int | None  # None when the batch had no rows
    max_event_time_ms: int | None
    malformed_rows: int
    recorded_at_ms: int


@dataclass(frozen=True, slots=True)
class GenerationRecord(JsonRecord):
    """One generation of a pipeline: its signature, its status and the plan that started it."""

    json_shape = Shape(what="generation record", error=LedgerRecordError)

    pipeline: str
    generation: int
    status: GenerationStatus
    signature: JsonObject
    plan: JsonObject | None
    created_at_ms: int
    updated_at_ms: int

    def __post_init__(self) -> None:
        # Accept the plain string a caller may pass ("running"); reject an unknown one now
        # rather than when the record is stored.
        object.__setattr__(self, "status", GenerationStatus(self.status))


@dataclass(frozen=True, slots=True)
class LedgerGap(JsonRecord):
    """A marker that the ledger missed a write, so readers know it is incomplete there."""

    json_shape = Shape(what="ledger gap", error=LedgerRecordError)

    pipeline: str
    generation: int
    batch_id: int | None  # None when the failed write was not about one batch
    reason: str
    recorded_at_ms: int


BATCH_FIELDS: tuple[str, ...] = tuple(field.name for field in fields(BatchRecord))


def dump_json(value: object) -> str:
    """Serialise to compact, key-sorted JSON; a value JSON cannot hold is a record error."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise LedgerRecordError(f"ledger value is not JSON-serialisable: {exc}") from exc


def load_json_object(text: str, what: str) -> dict[str, object]:
    """Parse JSON text that must hold an object; anything else is a record error."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LedgerRecordError(f"{what} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise LedgerRecordError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value
