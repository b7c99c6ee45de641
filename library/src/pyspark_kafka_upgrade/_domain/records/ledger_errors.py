"""The offset ledger's exceptions: every store raises these. One line, never a password."""

from __future__ import annotations

from pyspark_kafka_upgrade._domain.errors import PipelineError


class OffsetStoreError(PipelineError):
    """Base class of every error an offset store raises."""


class OffsetStoreUnavailableError(OffsetStoreError):
    """The store's database or filesystem cannot be reached or opened."""


class GenerationNotFoundError(OffsetStoreError):
    """A generation that was expected to be in the ledger is not there."""

    def __init__(self, pipeline: str, generation: int) -> None:
        super().__init__(f"pipeline {pipeline!r} has no generation {generation} in the ledger")
        self.pipeline = pipeline
        self.generation = generation


class LedgerSchemaError(OffsetStoreError):
    """The ledger was written by a newer version of this code, or its schema is unrecognised."""


class LedgerRecordError(OffsetStoreError):
    """A stored record, or one about to be stored, does not have the shape of a ledger record."""


class OffsetStoreNotInstalledError(OffsetStoreError):
    """The settings name a store whose module this project was not generated with."""
