"""An offset store in PostgreSQL, for a ledger shared by several machines."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import LiteralString, TypeAlias

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row

from pyspark_kafka_upgrade._adapters.ledger.sql_store import Row, SqlOffsetStore
from pyspark_kafka_upgrade._adapters.ledger.store_errors import (
    refuse_newer_schema,
    translated_errors,
)
from pyspark_kafka_upgrade._adapters.ledger.tables import Dialect, ledger_queries, migration
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    OffsetStoreError,
    OffsetStoreUnavailableError,
)
from pyspark_kafka_upgrade._domain.records.store import LEDGER_SCHEMA_VERSION
from pyspark_kafka_upgrade._domain.values.clock import now_ms
from pyspark_kafka_upgrade._domain.values.redaction import MASK, redact_text

DEFAULT_SCHEMA = "pipeline_ledger"
DEFAULT_CONNECT_TIMEOUT_S = 10
_MIN_VERBATIM_SECRET = 4

# A plain lower-case identifier, so the schema means the same quoted or not in psql.
_PLAIN_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")

DIALECT = Dialect(
    # {schema} is left in every statement's text, for psycopg.sql.Identifier to fill in,
    # never string formatting.
    table_prefix="{schema}.",
    placeholder="%s",
    integer="BIGINT",
    json="JSONB",
    gap_id="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
)


Connection: TypeAlias = psycopg.Connection[DictRow]


class PostgresOffsetStore(SqlOffsetStore[Connection]):
    """The ledger in a PostgreSQL schema of its own.

    The connection is in autocommit. One that broke (a server restart) is replaced on the
    next call; the call that saw it break fails with OffsetStoreUnavailableError so the
    caller can record a gap.
    """

    _queries = ledger_queries(DIALECT)

    def __init__(self, dsn: str, *, schema: str = DEFAULT_SCHEMA) -> None:
        super().__init__()
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
        self._name = f"offset store {self.describe()}"
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
        with (
            self._lock,
            translated_errors(
                self._name,
                action,
                closed=self._closed,
                unavailable=(psycopg.OperationalError,),
                failed=(psycopg.Error,),
                reason=self._reason,
            ),
        ):
            if self._connection.closed:
                self._connection = self._connect()
            yield self._connection

    def _table(self, name: str) -> sql.Identifier:
        return sql.Identifier(self._schema, name)

    def _in_schema(self, query: LiteralString) -> sql.Composed:
        return sql.SQL(query).format(schema=sql.Identifier(self._schema))

    def _write(self, action: str, query: LiteralString, parameters: tuple[object, ...]) -> int:
        with self._session(action) as connection:
            return connection.execute(self._in_schema(query), parameters).rowcount

    def _read(self, action: str, query: LiteralString, parameters: tuple[object, ...]) -> list[Row]:
        with self._session(action) as connection:
            return list(connection.execute(self._in_schema(query), parameters).fetchall())

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
        refuse_newer_schema(self._name, version)
        if version == LEDGER_SCHEMA_VERSION:
            return False
        if version == 0:
            self._create_version_table(connection)
        for statement in migration(DIALECT, version):
            connection.execute(self._in_schema(statement))
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

    def schema_version(self) -> int:
        with self._session("reading the schema version") as connection:
            return self._read_schema_version(connection)

    def describe(self) -> str:
        return f"PostgreSQL {self._redacted_dsn} (schema {self._schema})"


def _parse_dsn(dsn: str) -> dict[str, str]:
    try:
        options = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        # libpq's parse error quotes the DSN, password and all, so it is not repeated.
        raise OffsetStoreError(
            f"the PostgreSQL offset store DSN {redact_text(dsn)} is not a valid connection string"
        ) from None
    return {key: str(value) for key, value in options.items() if value is not None}
