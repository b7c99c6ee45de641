"""The ledger's records and their JSON form.

Offsets are kept as the canonical offsets JSON text (topics sorted, partitions in numeric
order, exactly as Spark's Kafka source writes it), so they compare and round-trip as strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Self

from pyspark_kafka_upgrade._domain.records.ledger_errors import LedgerRecordError
from pyspark_kafka_upgrade._domain.values.json_fields import JsonFields

JsonObject = Mapping[str, object]


class GenerationStatus(StrEnum):
    """Where a generation is in its life."""

    PLANNED = "planned"
    RUNNING = "running"
    RETIRED = "retired"


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One committed micro-batch, keyed by (pipeline, generation, batch_id)."""

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

    def to_json(self) -> dict[str, object]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_json(cls, data: JsonObject) -> Self:
        reader = JsonFields(data, "batch record", LedgerRecordError)
        return cls(
            pipeline=reader.text("pipeline"),
            generation=reader.integer("generation"),
            batch_id=reader.integer("batch_id"),
            query_id=reader.text("query_id"),
            run_id=reader.text("run_id"),
            batch_timestamp_ms=reader.integer("batch_timestamp_ms"),
            start_offsets=reader.optional_text("start_offsets"),
            end_offsets=reader.text("end_offsets"),
            batch_watermark_ms=reader.integer("batch_watermark_ms"),
            input_rows=reader.integer("input_rows"),
            min_event_time_ms=reader.optional_integer("min_event_time_ms"),
            max_event_time_ms=reader.optional_integer("max_event_time_ms"),
            malformed_rows=reader.integer("malformed_rows"),
            recorded_at_ms=reader.integer("recorded_at_ms"),
        )


@dataclass(frozen=True, slots=True)
class GenerationRecord:
    """One generation of a pipeline: its signature, its status and the plan that started it."""

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

    def to_json(self) -> dict[str, object]:
        return {
            "pipeline": self.pipeline,
            "generation": self.generation,
            "status": self.status.value,
            "signature": dict(self.signature),
            "plan": None if self.plan is None else dict(self.plan),
            "created_at_ms": self.created_at_ms,
            "updated_at_ms": self.updated_at_ms,
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Self:
        reader = JsonFields(data, "generation record", LedgerRecordError)
        return cls(
            pipeline=reader.text("pipeline"),
            generation=reader.integer("generation"),
            status=_status(reader),
            signature=reader.mapping("signature"),
            plan=reader.optional_mapping("plan"),
            created_at_ms=reader.integer("created_at_ms"),
            updated_at_ms=reader.integer("updated_at_ms"),
        )


@dataclass(frozen=True, slots=True)
class LedgerGap:
    """A marker that the ledger missed a write, so readers know it is incomplete there."""

    pipeline: str
    generation: int
    batch_id: int | None  # None when the failed write was not about one batch
    reason: str
    recorded_at_ms: int

    def to_json(self) -> dict[str, object]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_json(cls, data: JsonObject) -> Self:
        reader = JsonFields(data, "ledger gap", LedgerRecordError)
        return cls(
            pipeline=reader.text("pipeline"),
            generation=reader.integer("generation"),
            batch_id=reader.optional_integer("batch_id"),
            reason=reader.text("reason"),
            recorded_at_ms=reader.integer("recorded_at_ms"),
        )


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


def _status(reader: JsonFields) -> GenerationStatus:
    value = reader.text("status")
    try:
        return GenerationStatus(value)
    except ValueError:
        allowed = ", ".join(status.value for status in GenerationStatus)
        raise reader.error(
            f"generation record field 'status' is {value!r}, expected one of {allowed}"
        ) from None
