"""Damage a pipeline's ledger as real failures do, in whichever store the project chose.

The store's own interface never deletes anything, so the damage goes straight to the
storage: rows of the SQLite file or of the PostgreSQL schema, or files of the filesystem
store. Only the records of one pipeline are touched; a PostgreSQL server may hold the
ledgers of other tests at the same time.
"""

from __future__ import annotations

import importlib
import shutil
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

import support.offset_stores as stores
from pyspark_kafka_upgrade._core.settings import (
    LedgerSettings,
)

# Every table of the ledger that holds a pipeline's records, in both SQL stores.
_TABLES = ("batches", "generations", "gaps")


def delete_ledger(ledger: LedgerSettings, pipeline: str) -> None:
    """Lose the whole ledger: the file or directory, or every row of ``pipeline``."""
    if ledger.store == "sqlite":
        path = Path(ledger.location)
        for suffix in ("", "-wal", "-shm", "-journal"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
    elif ledger.store == "filesystem":
        shutil.rmtree(_local_path(ledger.location))
    elif ledger.store == "postgres":
        for table in _TABLES:
            _postgres(ledger, "DELETE FROM {}." + table + " WHERE pipeline = %s", (pipeline,))
    else:
        raise ValueError(f"no way to damage a {ledger.store!r} ledger")


def delete_batches(
    ledger: LedgerSettings, pipeline: str, generation: int, batch_ids: Iterable[int]
) -> None:
    """Lose the records of some committed batches, as a listener that never wrote them."""
    ids = sorted(set(batch_ids))
    if ledger.store == "sqlite":
        marks = ", ".join("?" for _ in ids)
        with closing(sqlite3.connect(ledger.location)) as connection, connection:
            connection.execute(
                "DELETE FROM batches WHERE pipeline = ? AND generation = ? "
                f"AND batch_id IN ({marks})",
                (pipeline, generation, *ids),
            )
    elif ledger.store == "filesystem":
        directory = _local_path(ledger.location) / "batches" / pipeline / f"gen={generation}"
        for batch_id in ids:
            name = f"{batch_id:020d}.json"
            (directory / name).unlink()
            (directory / f".{name}.crc").unlink(missing_ok=True)  # Hadoop's checksum
    elif ledger.store == "postgres":
        _postgres(
            ledger,
            "DELETE FROM {}.batches WHERE pipeline = %s AND generation = %s AND batch_id = ANY(%s)",
            (pipeline, generation, ids),
        )
    else:
        raise ValueError(f"no way to damage a {ledger.store!r} ledger")


def _local_path(location: str) -> Path:
    """The filesystem store's root in a test: a local path, or a ``file:`` URI of one."""
    return Path(location.removeprefix("file://").removeprefix("file:"))


def _postgres(ledger: LedgerSettings, query: str, params: tuple[object, ...]) -> None:
    # The schema the store uses by default; imported by name, since only a project that
    # chose PostgreSQL has the module.
    module = importlib.import_module(f"{stores.LEDGER_PACKAGE}.postgres_store")
    stores.postgres_execute(
        ledger.location, query, schema=str(module.DEFAULT_SCHEMA), params=params
    )
