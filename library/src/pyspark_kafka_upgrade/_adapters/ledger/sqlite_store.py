"""An offset store in one SQLite file, for a job and its CLI on the same machine."""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import LiteralString

from pyspark_kafka_upgrade._adapters.ledger.sql_store import Row, SqlOffsetStore
from pyspark_kafka_upgrade._adapters.ledger.store_errors import (
    refuse_newer_schema,
    translated_errors,
)
from pyspark_kafka_upgrade._adapters.ledger.tables import Dialect, ledger_queries, migration
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord, load_json_object
from pyspark_kafka_upgrade._domain.records.ledger_errors import OffsetStoreUnavailableError
from pyspark_kafka_upgrade._domain.records.store import LEDGER_SCHEMA_VERSION
from pyspark_kafka_upgrade._domain.values.clock import now_ms

DIALECT = Dialect(
    table_prefix="",
    placeholder="?",
    integer="INTEGER",
    json="TEXT",
    gap_id="INTEGER PRIMARY KEY AUTOINCREMENT",
)


class SqliteOffsetStore(SqlOffsetStore[sqlite3.Connection]):
    """The ledger in a SQLite database file.

    WAL mode lets the CLI read while the job writes, and the busy timeout makes either wait
    for the other's short write lock instead of failing.
    """

    _queries = ledger_queries(DIALECT)

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        super().__init__()
        self._path = Path(path)
        self._name = f"SQLite offset store at {self._path}"
        self._connection = self._open(busy_timeout_ms)
        try:
            with self._lock, self._translated_errors("migrating the schema"):
                self._migrate()
        except BaseException:
            self._connection.close()
            raise

    def _open(self, busy_timeout_ms: int) -> sqlite3.Connection:
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions; the migrations open their own.
            connection = sqlite3.connect(
                self._path,
                timeout=busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except (OSError, sqlite3.Error) as exc:
            raise OffsetStoreUnavailableError(
                f"cannot open the SQLite offset store at {self._path}: {exc}"
            ) from exc
        try:
            mode = _enable_wal(connection, deadline=time.monotonic() + busy_timeout_ms / 1000)
        except sqlite3.Error as exc:
            connection.close()
            raise OffsetStoreUnavailableError(
                f"cannot use {self._path} as a SQLite offset store: {exc}"
            ) from exc
        if mode != "wal":
            connection.close()
            raise OffsetStoreUnavailableError(
                f"SQLite at {self._path} refused WAL journal mode (got {mode!r}); "
                "it cannot be shared by a running job and the CLI"
            )
        return connection

    def _migrate(self) -> None:
        # A ledger already at this version is only read: opening it takes no write lock, so
        # a reader never waits on the job's write (nor on a job stopped in the middle of one).
        if self._schema_is_current():
            return
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            "version INTEGER PRIMARY KEY, applied_at_ms INTEGER NOT NULL)"
        )
        while True:
            # IMMEDIATE takes the write lock before reading the version, so two processes
            # opening a new ledger at once cannot both apply the same migration.
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                applied = self._apply_next_migration()
            except BaseException:
                if self._connection.in_transaction:
                    self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")
            if not applied:
                return

    def _apply_next_migration(self) -> bool:
        version = self._read_schema_version()
        refuse_newer_schema(self._name, version)
        if version == LEDGER_SCHEMA_VERSION:
            return False
        for statement in migration(DIALECT, version):
            self._connection.execute(statement)
        self._connection.execute(
            "INSERT INTO schema_version (version, applied_at_ms) VALUES (?, ?)",
            (version + 1, now_ms()),
        )
        return True

    def _schema_is_current(self) -> bool:
        exists = self._connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        if exists is None:
            return False
        version = self._read_schema_version()
        refuse_newer_schema(self._name, version)
        return version == LEDGER_SCHEMA_VERSION

    def _read_schema_version(self) -> int:
        row = self._connection.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return 0 if row[0] is None else int(row[0])

    def _translated_errors(self, action: str) -> AbstractContextManager[None]:
        return translated_errors(
            self._name,
            action,
            closed=self._closed,
            # Locked past the busy timeout, disk I/O, file gone: the store is unavailable.
            unavailable=(sqlite3.OperationalError,),
            failed=(sqlite3.Error,),
        )

    def _write(self, action: str, query: LiteralString, parameters: tuple[object, ...]) -> int:
        with self._lock, self._translated_errors(action):
            return self._connection.execute(query, parameters).rowcount

    def _read(self, action: str, query: LiteralString, parameters: tuple[object, ...]) -> list[Row]:
        with self._lock, self._translated_errors(action):
            cursor = self._connection.execute(query, parameters)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _generation_from_row(self, row: Row) -> GenerationRecord:
        # TEXT columns: the JSON comes back as written.
        data = dict(row)
        data["signature"] = load_json_object(str(row["signature"]), "generation signature")
        if row["plan"] is not None:
            data["plan"] = load_json_object(str(row["plan"]), "generation plan")
        return GenerationRecord.from_json(data)

    def schema_version(self) -> int:
        with self._lock, self._translated_errors("reading the schema version"):
            return self._read_schema_version()

    def describe(self) -> str:
        return f"SQLite database {self._path.absolute()}"


def _enable_wal(connection: sqlite3.Connection, *, deadline: float) -> str:
    """Switch to WAL, waiting out other connections that hold the lock meanwhile.

    Changing the journal mode of a new database needs an exclusive lock, and SQLite answers
    "database is locked" at once instead of calling the busy handler when another process
    opens the same new file at the same moment, so the busy timeout is applied here.
    """
    while True:
        try:
            return str(connection.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
