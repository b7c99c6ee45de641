"""What only the SQLite offset store promises, beyond the shared contract."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import support.offset_stores as stores


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
