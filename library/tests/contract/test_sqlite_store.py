"""What only the SQLite offset store promises, beyond the shared contract."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import support.offset_stores as stores
from pyspark_kafka_upgrade._adapters.ledger.sqlite_store import SqliteOffsetStore
from pyspark_kafka_upgrade._domain.records.ledger_errors import OffsetStoreUnavailableError


def test_sqlite_uses_wal_journal_mode(sqlite_harness: stores.StoreHarness) -> None:
    with sqlite_harness.open_store():
        pass
    connection = sqlite3.connect(sqlite_harness.location)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        connection.close()


def test_sqlite_creates_missing_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "ledger.sqlite"
    with stores.store_class("sqlite")(path) as store:
        store.record_batch(stores.make_batch(0))
    assert path.is_file()


def test_a_ledger_opens_and_reads_while_a_writer_holds_its_lock(tmp_path: Path) -> None:
    # A job stopped in the middle of its write (SIGSTOP, a debugger) holds the lock; the CLI
    # and the proofs still read what was committed, without waiting for it.
    path = tmp_path / "ledger.sqlite"
    with SqliteOffsetStore(path) as store:
        store.record_batch(stores.make_batch(0))
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM batches")  # uncommitted: no reader may see it
        with SqliteOffsetStore(path, busy_timeout_ms=200) as reader:
            assert [batch.batch_id for batch in reader.batches("page-views", 1)] == [0]
            # A write still waits for the lock, and says so once its timeout passes.
            with pytest.raises(OffsetStoreUnavailableError, match="database is locked"):
                reader.record_batch(stores.make_batch(1))
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_new_ledger_is_created_with_its_schema(tmp_path: Path) -> None:
    path = tmp_path / "new" / "ledger.sqlite"
    with SqliteOffsetStore(path) as store:
        store.record_batch(stores.make_batch(3))
    with SqliteOffsetStore(path) as store:
        assert [batch.batch_id for batch in store.batches("page-views", 1)] == [3]
