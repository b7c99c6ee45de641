"""An offset store in PostgreSQL, for a ledger shared by several machines."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import LiteralString, TypeAlias

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row

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
)
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    GenerationNotFoundError,
    LedgerSchemaError,
    OffsetStoreError,
    OffsetStoreUnavailableError,
)
from pyspark_kafka_upgrade._domain.records.store import LEDGER_SCHEMA_VERSION, OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import now_ms
from pyspark_kafka_upgrade._domain.values.redaction import MASK, redact_text

DEFAULT_SCHEMA = "pipeline_ledger"
DEFAULT_CONNECT_TIMEOUT_S = 10
_MIN_VERBATIM_SECRET = 4

# A plain lower-case identifier, so the schema means the same quoted or not in psql.
_PLAIN_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")

# MIGRATIONS[n] takes the schema from version n to n + 1, in one transaction. {schema} is
# filled in with psycopg.sql.Identifier, never by string formatting.
MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    first_schema(
        # {schema} is left in the text, for psycopg.sql.Identifier to fill in.
        table_prefix="{schema}.",
        integer="BIGINT",
        json="JSONB",
        gap_id="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    ),
)
assert len(MIGRATIONS) == LEDGER_SCHEMA_VERSION, "every schema version needs its migration"


Connection: TypeAlias = psycopg.Connection[DictRow]


class PostgresOffsetStore(OffsetStore):
    """The ledger in a PostgreSQL schema of its own.

    One autocommit connection serves every thread of this process, behind a lock, because
    listener callbacks arrive on their own thread. A connection that broke (a server restart)
    is replaced on the next call; the call that saw it break fails with
    OffsetStoreUnavailableError so the caller can record a gap.
    """

    def __init__(self, dsn: str, *, schema: str = DEFAULT_SCHEMA) -> None:
        if not _PLAIN_IDENTIFIER.fullmatch(schema):
            raise ValueError(
                f"ledger schema {schema!r} must be a plain lower-case SQL identifier "
                "(letters, digits and underscores, not starting with a digit)"
            )
        self._dsn = dsn
        self._options = _parse_dsn(dsn)
        # Masked verbatim too; a very short one would mask ordinary words, so it relies on
        # the patterns alone.
        self._secrets = [
            value
            for key in ("password", "sslpassword")
            if len(value := self._options.get(key, "")) >= _MIN_VERBATIM_SECRET
        ]
        self._redacted_dsn = self._redact(dsn)
        self._schema = schema
        self._lock = threading.Lock()
        self._closed = False
        self._connection = self._connect()
        try:
            with self._session("migrating the schema") as connection:
                self._migrate(connection)
        except BaseException:
            self._connection.close()
            raise

    def _redact(self, text: str) -> str:
        # The pattern-based mask, then the DSN's own secrets verbatim, for the shapes the
        # patterns miss (a password containing '@', an sslpassword).
        text = redact_text(text)
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text

    def _reason(self, exc: Exception) -> str:
        return self._redact(" ".join(str(exc).split()))

    def _connect(self) -> Connection:
        timeout = self._options.get("connect_timeout") or DEFAULT_CONNECT_TIMEOUT_S
        try:
            return psycopg.connect(
                self._dsn, autocommit=True, row_factory=dict_row, connect_timeout=timeout
            )
        except psycopg.Error as exc:
            # Not chained: the original exception is not redacted.
            raise OffsetStoreUnavailableError(
                f"cannot connect to the PostgreSQL offset store at {self._redacted_dsn}: "
                f"{self._reason(exc)}"
            ) from None

    @contextmanager
    def _session(self, action: str) -> Iterator[Connection]:
        """The live connection, held alone, with psycopg's errors turned into store errors."""
        with self._lock:
            if self._closed:
                raise OffsetStoreError(f"the offset store {self.describe()} is closed")
            if self._connection.closed:
                self._connection = self._connect()
            try:
                yield self._connection
            except psycopg.OperationalError as exc:
                raise OffsetStoreUnavailableError(
                    f"offset store {self.describe()} failed while {action}: {self._reason(exc)}"
                ) from exc
            except psycopg.Error as exc:
                raise OffsetStoreError(
                    f"offset store {self.describe()} failed while {action}: {self._reason(exc)}"
                ) from exc

    def _table(self, name: str) -> sql.Identifier:
        return sql.Identifier(self._schema, name)

    def _migrate(self, connection: Connection) -> None:
        while True:
            with connection.transaction():
                # Held to the end of the transaction: two processes opening a new ledger at
                # once apply each migration exactly once.
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key(),))
                if not self._apply_next_migration(connection):
                    return

    def _lock_key(self) -> int:
        digest = hashlib.blake2b(f"offset-ledger:{self._schema}".encode(), digest_size=8)
        return int.from_bytes(digest.digest(), "big", signed=True)

    def _apply_next_migration(self, connection: Connection) -> bool:
        version = self._read_schema_version(connection)
        if version > LEDGER_SCHEMA_VERSION:
            raise LedgerSchemaError(
                f"the PostgreSQL offset store {self.describe()} has schema version {version}, "
                f"but this code understands up to {LEDGER_SCHEMA_VERSION}; upgrade the pipeline"
            )
        if version == LEDGER_SCHEMA_VERSION:
            return False
        if version == 0:
            self._create_version_table(connection)
        schema = sql.Identifier(self._schema)
        for statement in MIGRATIONS[version]:
            connection.execute(sql.SQL(statement).format(schema=schema))
        connection.execute(
            sql.SQL("INSERT INTO {} (version, applied_at_ms) VALUES (%s, %s)").format(
                self._table("schema_version")
            ),
            (version + 1, now_ms()),
        )
        return True

    def _create_version_table(self, connection: Connection) -> None:
        # Checked before creating, so a user without CREATE rights can use a schema a DBA made.
        row = connection.execute(
            "SELECT count(*) AS present FROM pg_namespace WHERE nspname = %s", (self._schema,)
        ).fetchone()
        if row is None or row["present"] == 0:
            connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self._schema)))
        connection.execute(
            sql.SQL(
                "CREATE TABLE {} (version INTEGER PRIMARY KEY, applied_at_ms BIGINT NOT NULL)"
            ).format(self._table("schema_version"))
        )

    def _read_schema_version(self, connection: Connection) -> int:
        row = connection.execute(
            "SELECT to_regclass(%s) IS NOT NULL AS present",
            (f"{self._schema}.schema_version",),
        ).fetchone()
        if row is None or not row["present"]:
            return 0
        row = connection.execute(
            sql.SQL("SELECT coalesce(max(version), 0) AS version FROM {}").format(
                self._table("schema_version")
            )
        ).fetchone()
        return 0 if row is None else int(row["version"])

    def record_batch(self, record: BatchRecord) -> None:
        with self._session("recording a batch") as connection:
            connection.execute(self._upsert_batch_query(), record.to_json())

    def _upsert_batch_query(self) -> sql.Composed:
        updates = [
            sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(name))
            for name in BATCH_FIELDS
            if name not in BATCH_KEY
        ]
        return sql.SQL(
            "INSERT INTO {table} ({columns}) VALUES ({values}) "
            "ON CONFLICT ({key}) DO UPDATE SET {updates}"
        ).format(
            table=self._table("batches"),
            columns=sql.SQL(", ").join(map(sql.Identifier, BATCH_FIELDS)),
            values=sql.SQL(", ").join(map(sql.Placeholder, BATCH_FIELDS)),
            key=sql.SQL(", ").join(map(sql.Identifier, BATCH_KEY)),
            updates=sql.SQL(", ").join(updates),
        )

    def batches(self, pipeline: str, generation: int) -> list[BatchRecord]:
        query = self._batches_query("ORDER BY batch_id")
        with self._session("reading batches") as connection:
            rows = connection.execute(query, (pipeline, generation)).fetchall()
        return [BatchRecord.from_json(row) for row in rows]

    def last_batch(self, pipeline: str, generation: int) -> BatchRecord | None:
        query = self._batches_query("ORDER BY batch_id DESC LIMIT 1")
        with self._session("reading the last batch") as connection:
            row = connection.execute(query, (pipeline, generation)).fetchone()
        return None if row is None else BatchRecord.from_json(row)

    def _batches_query(self, order: LiteralString) -> sql.Composed:
        return sql.SQL(
            "SELECT {columns} FROM {table} WHERE pipeline = %s AND generation = %s " + order
        ).format(
            columns=sql.SQL(", ").join(map(sql.Identifier, BATCH_FIELDS)),
            table=self._table("batches"),
        )

    def record_generation(self, record: GenerationRecord) -> None:
        query = sql.SQL(
            "INSERT INTO {} (" + GENERATION_COLUMNS + ") VALUES "
            "(%s, %s, %s, CAST(%s AS jsonb), CAST(%s AS jsonb), %s, %s) "
            "ON CONFLICT (pipeline, generation) DO UPDATE SET status = EXCLUDED.status, "
            "signature = EXCLUDED.signature, plan = EXCLUDED.plan, "
            "created_at_ms = EXCLUDED.created_at_ms, updated_at_ms = EXCLUDED.updated_at_ms"
        ).format(self._table("generations"))
        values = (
            record.pipeline,
            record.generation,
            record.status.value,
            dump_json(record.signature),
            None if record.plan is None else dump_json(record.plan),
            record.created_at_ms,
            record.updated_at_ms,
        )
        with self._session("recording a generation") as connection:
            connection.execute(query, values)

    def generations(self, pipeline: str) -> list[GenerationRecord]:
        query = sql.SQL(
            "SELECT " + GENERATION_COLUMNS + " FROM {} WHERE pipeline = %s ORDER BY generation"
        ).format(self._table("generations"))
        with self._session("reading generations") as connection:
            rows = connection.execute(query, (pipeline,)).fetchall()
        return [GenerationRecord.from_json(row) for row in rows]

    def generation(self, pipeline: str, generation: int) -> GenerationRecord | None:
        query = sql.SQL(
            "SELECT " + GENERATION_COLUMNS + " FROM {} WHERE pipeline = %s AND generation = %s"
        ).format(self._table("generations"))
        with self._session("reading a generation") as connection:
            row = connection.execute(query, (pipeline, generation)).fetchone()
        return None if row is None else GenerationRecord.from_json(row)

    def set_generation_status(
        self, pipeline: str, generation: int, status: GenerationStatus, *, at_ms: int
    ) -> None:
        query = sql.SQL(
            "UPDATE {} SET status = %s, updated_at_ms = %s WHERE pipeline = %s AND generation = %s"
        ).format(self._table("generations"))
        values = (GenerationStatus(status).value, at_ms, pipeline, generation)
        with self._session("changing a generation's status") as connection:
            changed = connection.execute(query, values).rowcount
        if changed == 0:
            raise GenerationNotFoundError(pipeline, generation)

    def record_gap(self, gap: LedgerGap) -> None:
        query = sql.SQL("INSERT INTO {} (" + GAP_COLUMNS + ") VALUES (%s, %s, %s, %s, %s)").format(
            self._table("gaps")
        )
        values = (gap.pipeline, gap.generation, gap.batch_id, gap.reason, gap.recorded_at_ms)
        with self._session("recording a gap") as connection:
            connection.execute(query, values)

    def gaps(self, pipeline: str, generation: int | None = None) -> list[LedgerGap]:
        query = sql.SQL(
            "SELECT " + GAP_COLUMNS + " FROM {} WHERE pipeline = %(pipeline)s "
            "AND (CAST(%(generation)s AS bigint) IS NULL OR generation = %(generation)s) "
            "ORDER BY recorded_at_ms, id"
        ).format(self._table("gaps"))
        with self._session("reading gaps") as connection:
            rows = connection.execute(
                query, {"pipeline": pipeline, "generation": generation}
            ).fetchall()
        return [LedgerGap.from_json(row) for row in rows]

    def pipelines(self) -> list[str]:
        query = sql.SQL(
            "SELECT pipeline FROM {} UNION SELECT pipeline FROM {} "
            "UNION SELECT pipeline FROM {} ORDER BY pipeline"
        ).format(self._table("batches"), self._table("generations"), self._table("gaps"))
        with self._session("listing pipelines") as connection:
            rows = connection.execute(query).fetchall()
        return [str(row["pipeline"]) for row in rows]

    def schema_version(self) -> int:
        with self._session("reading the schema version") as connection:
            return self._read_schema_version(connection)

    def describe(self) -> str:
        return f"PostgreSQL {self._redacted_dsn} (schema {self._schema})"

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._connection.close()


def _parse_dsn(dsn: str) -> dict[str, str]:
    try:
        options = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        # libpq's parse error quotes the DSN, password and all, so it is not repeated.
        raise OffsetStoreError(
            f"the PostgreSQL offset store DSN {redact_text(dsn)} is not a valid connection string"
        ) from None
    return {key: str(value) for key, value in options.items() if value is not None}
