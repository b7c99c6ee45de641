"""How every store reports a failure, whatever its client library raised.

A store that cannot be reached raises ``OffsetStoreUnavailableError``, on which the listener
records a gap and the job carries on; any other failure is an ``OffsetStoreError``. Each
message names the store (``store``: "offset store at <where>"), never a password.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    LedgerSchemaError,
    OffsetStoreError,
    OffsetStoreUnavailableError,
)
from pyspark_kafka_upgrade._domain.records.store import LEDGER_SCHEMA_VERSION


@contextmanager
def translated_errors(
    store: str,
    action: str,
    *,
    closed: bool,
    unavailable: tuple[type[Exception], ...],
    failed: tuple[type[Exception], ...] = (),
    reason: Callable[[Exception], str] = str,
) -> Iterator[None]:
    """Refuse a ``closed`` store; turn the client's ``unavailable`` exceptions into
    ``OffsetStoreUnavailableError`` and its ``failed`` ones into ``OffsetStoreError``, which
    say what failed while doing ``action`` in ``reason``'s words."""
    if closed:
        raise OffsetStoreError(f"the {store} is closed")
    try:
        yield
    except unavailable as exc:
        raise OffsetStoreUnavailableError(f"{store} failed while {action}: {reason(exc)}") from exc
    except failed as exc:
        raise OffsetStoreError(f"{store} failed while {action}: {reason(exc)}") from exc


def refuse_newer_schema(store: str, version: int) -> None:
    """A ledger written by newer code may hold what this code would misread or overwrite."""
    if version > LEDGER_SCHEMA_VERSION:
        raise LedgerSchemaError(
            f"the {store} has schema version {version}, but this code understands up to "
            f"{LEDGER_SCHEMA_VERSION}; upgrade the pipeline"
        )
