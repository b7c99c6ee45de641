"""What the SQL stores (``sqlite_store``, ``postgres_store``) do alike: the ledger's records
to and from rows, through the queries of ``tables``.

Each store keeps its own connection, migrations and errors, and runs a query with
``_write`` and ``_read``.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Mapping
from typing import Generic, LiteralString, Protocol, TypeVar

from pyspark_kafka_upgrade._adapters.ledger.tables import LedgerQueries
from pyspark_kafka_upgrade._domain.records.ledger import (
    BATCH_FIELDS,
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
    dump_json,
)
from pyspark_kafka_upgrade._domain.records.ledger_errors import GenerationNotFoundError
from pyspark_kafka_upgrade._domain.records.store import OffsetStore

Row = Mapping[str, object]


class _Connection(Protocol):
    def close(self) -> None: ...


ConnectionT = TypeVar("ConnectionT", bound=_Connection)


class SqlOffsetStore(OffsetStore, Generic[ConnectionT]):
    """The ledger in three SQL tables, through one connection.

    The connection serves every thread of this process, behind ``_lock``, because listener
    callbacks arrive on their own thread.
    """

    _queries: LedgerQueries
    _connection: ConnectionT

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False

    @abstractmethod
    def _write(self, action: str, query: LiteralString, parameters: tuple[object, ...]) -> int:
        """Run ``query``; the number of rows it changed. ``action`` is for the error."""

    @abstractmethod
    def _read(self, action: str, query: LiteralString, parameters: tuple[object, ...]) -> list[Row]:
        """Run ``query``; its rows by column name. ``action`` is for the error."""

    def _generation_from_row(self, row: Row) -> GenerationRecord:
        return GenerationRecord.from_json(row)

    def record_batch(self, record: BatchRecord) -> None:
        data = record.to_json()
        values = tuple(data[name] for name in BATCH_FIELDS)
        self._write("recording a batch", self._queries.record_batch, values)

    def batches(self, pipeline: str, generation: int) -> list[BatchRecord]:
        rows = self._read("reading batches", self._queries.batches, (pipeline, generation))
        return [BatchRecord.from_json(row) for row in rows]

    def last_batch(self, pipeline: str, generation: int) -> BatchRecord | None:
        rows = self._read(
            "reading the last batch", self._queries.last_batch, (pipeline, generation)
        )
        return BatchRecord.from_json(rows[0]) if rows else None

    def record_generation(self, record: GenerationRecord) -> None:
        values = (
            record.pipeline,
            record.generation,
            record.status.value,
            dump_json(record.signature),
            None if record.plan is None else dump_json(record.plan),
            record.created_at_ms,
            record.updated_at_ms,
        )
        self._write("recording a generation", self._queries.record_generation, values)

    def generations(self, pipeline: str) -> list[GenerationRecord]:
        rows = self._read("reading generations", self._queries.generations, (pipeline,))
        return [self._generation_from_row(row) for row in rows]

    def generation(self, pipeline: str, generation: int) -> GenerationRecord | None:
        rows = self._read("reading a generation", self._queries.generation, (pipeline, generation))
        return self._generation_from_row(rows[0]) if rows else None

    def set_generation_status(
        self, pipeline: str, generation: int, status: GenerationStatus, *, at_ms: int
    ) -> None:
        changed = self._write(
            "changing a generation's status",
            self._queries.set_generation_status,
            (GenerationStatus(status).value, at_ms, pipeline, generation),
        )
        if changed == 0:
            raise GenerationNotFoundError(pipeline, generation)

    def record_gap(self, gap: LedgerGap) -> None:
        values = (gap.pipeline, gap.generation, gap.batch_id, gap.reason, gap.recorded_at_ms)
        self._write("recording a gap", self._queries.record_gap, values)

    def gaps(self, pipeline: str, generation: int | None = None) -> list[LedgerGap]:
        rows = self._read("reading gaps", self._queries.gaps, (pipeline, generation, generation))
        return [LedgerGap.from_json(row) for row in rows]

    def pipelines(self) -> list[str]:
        rows = self._read("listing pipelines", self._queries.pipelines, ())
        return [str(row["pipeline"]) for row in rows]

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._connection.close()
