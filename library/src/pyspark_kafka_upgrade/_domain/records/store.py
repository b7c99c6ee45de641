"""The interface every offset store implements."""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self

from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
)

LEDGER_SCHEMA_VERSION = 1
"""The newest ledger schema this code reads and writes. A store refuses a newer one."""


class OffsetStore(Protocol):
    """Where the ledger keeps its records.

    Writes come from a streaming query listener, whose progress events are asynchronous and
    may arrive twice or late, possibly on a thread other than the one that opened the store.
    So every write is an idempotent upsert (the last write for a key wins) and every
    implementation is safe to call from several threads at once.

    Implementations subclass this protocol explicitly to inherit the context-manager methods.
    """

    def record_batch(self, record: BatchRecord) -> None:
        """Upsert a batch keyed by (pipeline, generation, batch_id)."""
        ...

    def batches(self, pipeline: str, generation: int) -> list[BatchRecord]:
        """Every batch of one generation, ordered by batch_id."""
        ...

    def last_batch(self, pipeline: str, generation: int) -> BatchRecord | None:
        """The batch with the highest batch_id of one generation, or None if it has none."""
        ...

    def record_generation(self, record: GenerationRecord) -> None:
        """Upsert a generation keyed by (pipeline, generation)."""
        ...

    def generations(self, pipeline: str) -> list[GenerationRecord]:
        """Every generation of a pipeline, ordered by generation number."""
        ...

    def generation(self, pipeline: str, generation: int) -> GenerationRecord | None:
        """One generation, or None if the ledger does not know it."""
        ...

    def set_generation_status(
        self, pipeline: str, generation: int, status: GenerationStatus, *, at_ms: int
    ) -> None:
        """Change a generation's status and updated_at_ms.

        Raises GenerationNotFoundError when the generation was never recorded.
        """
        ...

    def record_gap(self, gap: LedgerGap) -> None:
        """Add a marker for a write that failed. Gaps are appended, never merged."""
        ...

    def gaps(self, pipeline: str, generation: int | None = None) -> list[LedgerGap]:
        """A pipeline's gaps, of one generation or of all, ordered by recorded_at_ms."""
        ...

    def pipelines(self) -> list[str]:
        """The names of every pipeline with any record, sorted."""
        ...

    def schema_version(self) -> int:
        """The schema version of the stored ledger."""
        ...

    def describe(self) -> str:
        """Where the ledger is stored, for humans; any password is redacted."""
        ...

    def close(self) -> None:
        """Release connections. Calling it twice is harmless."""
        ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
