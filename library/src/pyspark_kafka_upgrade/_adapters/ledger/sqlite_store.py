"""An offset store in one SQLite file, for a job and its CLI on the same machine."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark_kafka_upgrade._adapters.ledger.tables import (
    BATCH_KEY,
    GAP_COLUMNS,
    GENERATION_COLUMNS,
    first_schema,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BATCH_FIELDS,
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
    dump_json,
    load_json_object,
)
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    GenerationNotFoundError,
    LedgerSchemaError,
    OffsetStoreError,
    OffsetStoreUnavailableError,
)
from pyspark_kafka_upgrade._domain.records.store import LEDGER_SCHEMA_VERSION, OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import now_ms

# MIGRATIONS[n] takes the schema from version n to n + 1, in one transaction.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    first_schema(
        table_prefix="", integer="INTEGER", json="TEXT", gap_id="INTEGER PRIMARY KEY AUTOINCREMENT"
    ),
)
assert len(MIGRATIONS) == LEDGER_SCHEMA_VERSION, "every schema version needs its migration"

_BATCH_COLUMNS = ", ".join(BATCH_FIELDS)
_UPSERT_BATCH = (
    f"INSERT INTO batches ({_BATCH_COLUMNS}) VALUES ({', '.join('?' for _ in BATCH_FIELDS)}) "
    f"ON CONFLICT ({', '.join(BATCH_KEY)}) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in BATCH_FIELDS if name not in BATCH_KEY)
)
_UPSERT_GENERATION = (
    f"INSERT INTO generations ({GENERATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (pipeline, generation) DO UPDATE SET status = excluded.status, "
    "signature = excluded.signature, plan = excluded.plan, "
    "created_at_ms = excluded.created_at_ms, updated_at_ms = excluded.updated_at_ms"
)


class SqliteOffsetStore(OffsetStore):
    """The ledger in a SQLite database file.

    WAL mode lets the CLI read while the job writes, and the busy timeout makes either wait
    for the other's short write lock instead of failing. One connection serves every thread
    of this process, behind a lock, because listener callbacks arrive on their own thread.
    """

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()
        self._closed = False
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
        if version > LEDGER_SCHEMA_VERSION:
            raise LedgerSchemaError(
                f"the SQLite offset store at {self._path} has schema version {version}, but "
                f"this code understands up to {LEDGER_SCHEMA_VERSION}; upgrade the pipeline"
            )
        if version == LEDGER_SCHEMA_VERSION:
            return False
        for statement in MIGRATIONS[version]:
            self._connection.execute(statement)
        self._connection.execute(
            "INSERT INTO schema_version (version, applied_at_ms) VALUES (?, ?)",
            (version + 1, now_ms()),
        )
        return True

    def _read_schema_version(self) -> int:
        row = self._connection.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return 0 if row[0] is None else int(row[0])

    @contextmanager
    def _translated_errors(self, action: str) -> Iterator[None]:
        if self._closed:
            raise OffsetStoreError(f"the SQLite offset store at {self._path} is closed")
        try:
            yield
        except sqlite3.OperationalError as exc:
            # Locked past the busy timeout, disk I/O, file gone: the store is unavailable.
            raise OffsetStoreUnavailableError(
                f"SQLite offset store at {self._path} failed while {action}: {exc}"
            ) from exc
        except sqlite3.Error as exc:
            raise OffsetStoreError(
                f"SQLite offset store at {self._path} failed while {action}: {exc}"
            ) from exc

    def _write(self, action: str, sql: str, parameters: tuple[object, ...]) -> int:
        with self._lock, self._translated_errors(action):
            return self._connection.execute(sql, parameters).rowcount

    def _read(
        self, action: str, sql: str, parameters: tuple[object, ...]
    ) -> list[Mapping[str, object]]:
        with self._lock, self._translated_errors(action):
            cursor = self._connection.execute(sql, parameters)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def record_batch(self, record: BatchRecord) -> None:
        data = record.to_json()
        values = tuple(data[name] for name in BATCH_FIELDS)
        self._write("recording a batch", _UPSERT_BATCH, values)

    def batches(self, pipeline: str, generation: int) -> list[BatchRecord]:
        rows = self._read(
            "reading batches",
            f"SELECT {_BATCH_COLUMNS} FROM batches WHERE pipeline = ? AND generation = ? "
            "ORDER BY batch_id",
            (pipeline, generation),
        )
        return [BatchRecord.from_json(row) for row in rows]

    def last_batch(self, pipeline: str, generation: int) -> BatchRecord | None:
        rows = self._read(
            "reading the last batch",
            f"SELECT {_BATCH_COLUMNS} FROM batches WHERE pipeline = ? AND generation = ? "
            "ORDER BY batch_id DESC LIMIT 1",
            (pipeline, generation),
        )
        return BatchRecord.from_json(rows[0]) if rows else None

    def record_generation(self, record: GenerationRecord) -> None:
        plan = None if record.plan is None else dump_json(record.plan)
        values = (
            record.pipeline,
            record.generation,
            record.status.value,
            dump_json(record.signature),
            plan,
            record.created_at_ms,
            record.updated_at_ms,
        )
        self._write("recording a generation", _UPSERT_GENERATION, values)

    def generations(self, pipeline: str) -> list[GenerationRecord]:
        rows = self._read(
            "reading generations",
            f"SELECT {GENERATION_COLUMNS} FROM generations WHERE pipeline = ? ORDER BY generation",
            (pipeline,),
        )
        return [_generation_from_row(row) for row in rows]

    def generation(self, pipeline: str, generation: int) -> GenerationRecord | None:
        rows = self._read(
            "reading a generation",
            f"SELECT {GENERATION_COLUMNS} FROM generations WHERE pipeline = ? AND generation = ?",
            (pipeline, generation),
        )
        return _generation_from_row(rows[0]) if rows else None

    def set_generation_status(
        self, pipeline: str, generation: int, status: GenerationStatus, *, at_ms: int
    ) -> None:
        changed = self._write(
            "changing a generation's status",
            "UPDATE generations SET status = ?, updated_at_ms = ? "
            "WHERE pipeline = ? AND generation = ?",
            (GenerationStatus(status).value, at_ms, pipeline, generation),
        )
        if changed == 0:
            raise GenerationNotFoundError(pipeline, generation)

    def record_gap(self, gap: LedgerGap) -> None:
        self._write(
            "recording a gap",
            f"INSERT INTO gaps ({GAP_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
            (gap.pipeline, gap.generation, gap.batch_id, gap.reason, gap.recorded_at_ms),
        )

    def gaps(self, pipeline: str, generation: int | None = None) -> list[LedgerGap]:
        rows = self._read(
            "reading gaps",
            f"SELECT {GAP_COLUMNS} FROM gaps WHERE pipeline = ? "
            "AND (? IS NULL OR generation = ?) ORDER BY recorded_at_ms, id",
            (pipeline, generation, generation),
        )
        return [LedgerGap.from_json(row) for row in rows]

    def pipelines(self) -> list[str]:
        rows = self._read(
            "listing pipelines",
            "SELECT pipeline FROM batches UNION SELECT pipeline FROM generations "
            "UNION SELECT pipeline FROM gaps ORDER BY pipeline",
            (),
        )
        return [str(row["pipeline"]) for row in rows]

    def schema_version(self) -> int:
        with self._lock, self._translated_errors("reading the schema version"):
            return self._read_schema_version()

    def describe(self) -> str:
        return f"SQLite database {self._path.absolute()}"

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._connection.close()


def _generation_from_row(row: Mapping[str, object]) -> GenerationRecord:
    data = dict(row)
    data["signature"] = load_json_object(str(row["signature"]), "generation signature")
    if row["plan"] is not None:
        data["plan"] = load_json_object(str(row["plan"]), "generation plan")
    return GenerationRecord.from_json(data)


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
