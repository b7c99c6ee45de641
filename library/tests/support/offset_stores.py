"""Opening each offset store on a test's location, and records to store.

Stores are found by name in ``values.catalog``, so the same contract tests run against
every one of them.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
)
from pyspark_kafka_upgrade._domain.records.store import (
    OffsetStore,
)
from pyspark_kafka_upgrade._domain.values.catalog import (
    STORES,
)

LEDGER_PACKAGE = "pyspark_kafka_upgrade._adapters.ledger"
# Every store: the library's suite installs every extra, and must test them all.
STORE_KINDS = list(STORES)


@dataclasses.dataclass(frozen=True)
class StoreHarness:
    """How to open one kind of store on one test's location, and to tamper with it."""

    kind: str
    open_store: Callable[[], OffsetStore]
    set_schema_version: Callable[[int], None]  # record a version as if newer code wrote it
    location: str  # what describe() should mention


def store_class(kind: str) -> Any:
    """The store class of one kind ("sqlite", "postgres", "filesystem")."""
    entry = STORES[kind]  # type: ignore[index]  # a name the test gives, checked here
    module = importlib.import_module(f"{LEDGER_PACKAGE}.{entry.module}")
    return getattr(module, entry.class_name)


def _psycopg(module: str) -> Any:
    # Imported by name: a project without the postgres store does not install psycopg, and
    # its type checker must not need it.
    return importlib.import_module(module)


def postgres_execute(
    dsn: str, query: str, *, schema: str | None = None, params: tuple[object, ...] = ()
) -> None:
    """Run one statement on its own autocommit connection; ``{}`` in it names ``schema``."""
    psycopg, sql = _psycopg("psycopg"), _psycopg("psycopg.sql")
    statement = sql.SQL(query)
    if schema is not None:
        statement = statement.format(sql.Identifier(schema))
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(statement, params)


def postgres_dsn_options(dsn: str) -> dict[str, str]:
    options = _psycopg("psycopg.conninfo").conninfo_to_dict(dsn)
    return {str(key): str(value) for key, value in options.items() if value is not None}


def postgres_dsn_with(dsn: str, **options: str) -> str:
    """The DSN with options added or replaced, in libpq's key=value form."""
    return str(_psycopg("psycopg.conninfo").make_conninfo(dsn, **options))


def make_batch(batch_id: int = 0, **changes: Any) -> BatchRecord:
    record = BatchRecord(
        pipeline="page-views",
        generation=1,
        batch_id=batch_id,
        query_id="0c5c4a49-6a2e-4f4e-9d43-2f0a8f1f6c11",
        run_id="7d1d0e1b-2a5e-4d3f-8f6e-9a9b2b3c4d5e",
        batch_timestamp_ms=1_700_000_000_000 + batch_id,
        start_offsets='{"page-views":{"0":10,"1":12}}',
        end_offsets='{"page-views":{"0":20,"1":25}}',
        batch_watermark_ms=1_699_999_700_000,
        input_rows=23,
        min_event_time_ms=1_699_999_000_000,
        max_event_time_ms=1_700_000_000_000,
        malformed_rows=2,
        recorded_at_ms=1_700_000_000_500 + batch_id,
    )
    return dataclasses.replace(record, **changes)


def make_generation(generation: int = 1, **changes: Any) -> GenerationRecord:
    record = GenerationRecord(
        pipeline="page-views",
        generation=generation,
        status=GenerationStatus.PLANNED,
        signature={
            "sources": [{"topic": "page-views", "connector": "builtin"}],
            "window": {"duration": "10 minutes", "slide": None},
            "aggregates": [{"name": "views", "type": "bigint"}],
            "watermark_delay_ms": 300_000,
            "spark_version": "4.3.0",
            "sink": {"format": "parquet", "directory": "data/out/gen=1", "note": "déjà vu"},
        },
        plan=None,
        created_at_ms=1_700_000_000_000,
        updated_at_ms=1_700_000_000_000,
    )
    return dataclasses.replace(record, **changes)


def make_gap(recorded_at_ms: int, **changes: Any) -> LedgerGap:
    record = LedgerGap(
        pipeline="page-views",
        generation=1,
        batch_id=4,
        reason="OffsetStoreUnavailableError: database is locked",
        recorded_at_ms=recorded_at_ms,
    )
    return dataclasses.replace(record, **changes)
