"""The SQLite ledger's own behaviour beyond the stores' contract: a reader opens a ledger at
the current schema while another process holds its write lock."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pyspark_kafka_upgrade._adapters.ledger.sqlite_store import SqliteOffsetStore
from pyspark_kafka_upgrade._domain.records.ledger_errors import OffsetStoreUnavailableError
from support.offset_stores import make_batch


def test_a_ledger_opens_and_reads_while_a_writer_holds_its_lock(tmp_path: Path) -> None:
    # A job stopped in the middle of its write (SIGSTOP, a debugger) holds the lock; the CLI
    # and the proofs still read what was committed, without waiting for it.
    path = tmp_path / "ledger.sqlite"
    with SqliteOffsetStore(path) as store:
        store.record_batch(make_batch(0))
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM batches")  # uncommitted: no reader may see it
        with SqliteOffsetStore(path, busy_timeout_ms=200) as reader:
            assert [batch.batch_id for batch in reader.batches("page-views", 1)] == [0]
            # A write still waits for the lock, and says so once its timeout passes.
            with pytest.raises(OffsetStoreUnavailableError, match="database is locked"):
                reader.record_batch(make_batch(1))
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_new_ledger_is_created_with_its_schema(tmp_path: Path) -> None:
    path = tmp_path / "new" / "ledger.sqlite"
    with SqliteOffsetStore(path) as store:
        store.record_batch(make_batch(3))
    with SqliteOffsetStore(path) as store:
        assert [batch.batch_id for batch in store.batches("page-views", 1)] == [3]
