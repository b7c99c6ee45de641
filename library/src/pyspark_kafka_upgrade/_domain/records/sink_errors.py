"""The exceptions every sink raises: nothing to read, generations that do not fit in one
table, committed output that is damaged. One line each, as the ledger's are."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile, generations_of


class SinkError(PipelineError):
    """Base class of every error a sink raises on purpose."""


class NoOutputError(SinkError):
    """There is nothing committed to read; the message names where it looked."""


class IncompatibleGenerationsError(SinkError):
    """The generations' output cannot be one table with a ``generation`` column.

    Either two generations wrote a column with types that cannot be unioned, or the output
    already has a column of that name.
    """


class IntegrityError(SinkError):
    """A generation's committed output is damaged or cannot be read; one line says which
    file of which generation, what happened and what to do."""

    def __init__(self, damaged: Sequence[DamagedFile], alternative: str | None = None) -> None:
        if not damaged:
            raise ValueError("an IntegrityError names at least one damaged file")
        self.damaged = tuple(damaged)
        first, more = self.damaged[0], len(self.damaged) - 1
        line = first.message(alternative)
        if more:
            generations = ", ".join(map(str, generations_of(self.damaged[1:])))
            line += (
                f" ({more} more damaged in generation {generations}: `verify --json` lists each)"
            )
        super().__init__(line)


class DeltaLogError(SinkError):
    """A Delta table's log cannot be read: its client library is missing, or the storage
    refused; the message names the table."""


class TableNameError(SinkError):
    """The table's catalog name (``sink.table_name``) cannot be registered over its location:
    the name stands for another location, or the catalog refused; the message says which."""

    exit_code = 2
