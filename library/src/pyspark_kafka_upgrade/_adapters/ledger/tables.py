"""The ledger's tables and queries as the SQL stores (``sqlite_store``, ``postgres_store``)
define them.

Both hold the same three tables with the same columns and ask them the same questions; only
the column types and the parameter placeholder are each dialect's own. One text, with those
filled in, keeps the two stores from drifting apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import LiteralString

from pyspark_kafka_upgrade._domain.records.ledger import BATCH_FIELDS
from pyspark_kafka_upgrade._domain.records.store import LEDGER_SCHEMA_VERSION

BATCH_KEY = ("pipeline", "generation", "batch_id")
GENERATION_COLUMNS: LiteralString = (
    "pipeline, generation, status, signature, plan, created_at_ms, updated_at_ms"
)
GAP_COLUMNS: LiteralString = "pipeline, generation, batch_id, reason, recorded_at_ms"


@dataclass(frozen=True, slots=True)
class Dialect:
    """What one SQL store writes its own way."""

    table_prefix: LiteralString  # before each table name
    placeholder: LiteralString  # a query parameter
    integer: LiteralString  # column types
    json: LiteralString
    gap_id: LiteralString  # the type of a gap's generated key


@dataclass(frozen=True, slots=True)
class LedgerQueries:
    """The statements behind ``OffsetStore``'s methods, named after them, in one dialect.

    Parameters are positional, in the order of the columns they fill or test; ``gaps``
    takes the generation twice (NULL: every generation).
    """

    record_batch: LiteralString
    batches: LiteralString
    last_batch: LiteralString
    record_generation: LiteralString
    generations: LiteralString
    generation: LiteralString
    set_generation_status: LiteralString
    record_gap: LiteralString
    gaps: LiteralString
    pipelines: LiteralString


def ledger_queries(dialect: Dialect) -> LedgerQueries:
    """The queries of schema version 1 in ``dialect``."""
    prefix, p = dialect.table_prefix, dialect.placeholder
    json_value = f"CAST({p} AS {dialect.json})"
    batch_columns = ", ".join(BATCH_FIELDS)
    batch_updates = ", ".join(
        f"{name} = excluded.{name}" for name in BATCH_FIELDS if name not in BATCH_KEY
    )
    select_batches = (
        f"SELECT {batch_columns} FROM {prefix}batches WHERE pipeline = {p} AND generation = {p}"
    )
    select_generations = (
        f"SELECT {GENERATION_COLUMNS} FROM {prefix}generations WHERE pipeline = {p}"
    )
    return LedgerQueries(
        record_batch=(
            f"INSERT INTO {prefix}batches ({batch_columns}) "
            f"VALUES ({', '.join(p for _ in BATCH_FIELDS)}) "
            f"ON CONFLICT ({', '.join(BATCH_KEY)}) DO UPDATE SET {batch_updates}"
        ),
        batches=f"{select_batches} ORDER BY batch_id",
        last_batch=f"{select_batches} ORDER BY batch_id DESC LIMIT 1",
        record_generation=(
            f"INSERT INTO {prefix}generations ({GENERATION_COLUMNS}) "
            f"VALUES ({p}, {p}, {p}, {json_value}, {json_value}, {p}, {p}) "
            "ON CONFLICT (pipeline, generation) DO UPDATE SET status = excluded.status, "
            "signature = excluded.signature, plan = excluded.plan, "
            "created_at_ms = excluded.created_at_ms, updated_at_ms = excluded.updated_at_ms"
        ),
        generations=f"{select_generations} ORDER BY generation",
        generation=f"{select_generations} AND generation = {p}",
        set_generation_status=(
            f"UPDATE {prefix}generations SET status = {p}, updated_at_ms = {p} "
            f"WHERE pipeline = {p} AND generation = {p}"
        ),
        record_gap=f"INSERT INTO {prefix}gaps ({GAP_COLUMNS}) VALUES ({p}, {p}, {p}, {p}, {p})",
        gaps=(
            f"SELECT {GAP_COLUMNS} FROM {prefix}gaps WHERE pipeline = {p} "
            f"AND (CAST({p} AS {dialect.integer}) IS NULL OR generation = {p}) "
            "ORDER BY recorded_at_ms, id"
        ),
        pipelines=(
            f"SELECT pipeline FROM {prefix}batches UNION SELECT pipeline FROM {prefix}generations "
            f"UNION SELECT pipeline FROM {prefix}gaps ORDER BY pipeline"
        ),
    )


def first_schema(dialect: Dialect) -> tuple[LiteralString, ...]:
    """The statements of schema version 1 in ``dialect``."""
    table_prefix, integer = dialect.table_prefix, dialect.integer
    json, gap_id = dialect.json, dialect.gap_id
    return (
        f"""
        CREATE TABLE {table_prefix}batches (
            pipeline TEXT NOT NULL,
            generation {integer} NOT NULL,
            batch_id {integer} NOT NULL,
            query_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            batch_timestamp_ms {integer} NOT NULL,
            start_offsets TEXT,
            end_offsets TEXT NOT NULL,
            batch_watermark_ms {integer} NOT NULL,
            input_rows {integer} NOT NULL,
            min_event_time_ms {integer},
            max_event_time_ms {integer},
            malformed_rows {integer} NOT NULL,
            recorded_at_ms {integer} NOT NULL,
            PRIMARY KEY (pipeline, generation, batch_id)
        )
        """,
        f"""
        CREATE TABLE {table_prefix}generations (
            pipeline TEXT NOT NULL,
            generation {integer} NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('planned', 'running', 'retired')),
            signature {json} NOT NULL,
            plan {json},
            created_at_ms {integer} NOT NULL,
            updated_at_ms {integer} NOT NULL,
            PRIMARY KEY (pipeline, generation)
        )
        """,
        f"""
        CREATE TABLE {table_prefix}gaps (
            id {gap_id},
            pipeline TEXT NOT NULL,
            generation {integer} NOT NULL,
            batch_id {integer},
            reason TEXT NOT NULL,
            recorded_at_ms {integer} NOT NULL
        )
        """,
        f"CREATE INDEX gaps_by_generation ON {table_prefix}gaps (pipeline, generation)",
    )


def migration(dialect: Dialect, version: int) -> tuple[LiteralString, ...]:
    """The statements that take the schema from ``version`` to ``version + 1``, which a store
    runs in one transaction."""
    return _MIGRATIONS[version](dialect)


_MIGRATIONS: tuple[Callable[[Dialect], tuple[LiteralString, ...]], ...] = (first_schema,)
assert len(_MIGRATIONS) == LEDGER_SCHEMA_VERSION, "every schema version needs its migration"
