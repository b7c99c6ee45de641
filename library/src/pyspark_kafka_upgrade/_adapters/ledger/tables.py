"""The ledger's tables as the SQL stores (``sqlite_store``, ``postgres_store``) define them.

Both hold the same three tables with the same columns; only the column types are each
dialect's own. One text, with the types filled in, keeps the two schemas from drifting apart.
"""

from __future__ import annotations

from typing import LiteralString

BATCH_KEY = ("pipeline", "generation", "batch_id")
GENERATION_COLUMNS: LiteralString = (
    "pipeline, generation, status, signature, plan, created_at_ms, updated_at_ms"
)
GAP_COLUMNS: LiteralString = "pipeline, generation, batch_id, reason, recorded_at_ms"


def first_schema(
    *,
    table_prefix: LiteralString,
    integer: LiteralString,
    json: LiteralString,
    gap_id: LiteralString,
) -> tuple[LiteralString, ...]:
    """The statements of schema version 1: ``integer`` and ``json`` are the dialect's column
    types, ``gap_id`` the type of a gap's generated key, ``table_prefix`` comes before each
    table name."""
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
