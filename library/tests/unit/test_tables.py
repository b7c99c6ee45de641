"""The ledger's SQL text, checked against SQLite in memory: each query runs on the schema it
is written for, with as many parameters as the stores pass it."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from pyspark_kafka_upgrade._adapters.ledger.sqlite_store import (
    DIALECT as SQLITE,
)
from pyspark_kafka_upgrade._adapters.ledger.tables import (
    first_schema,
    ledger_queries,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BATCH_FIELDS,
)

PARAMETERS = {
    "record_batch": len(BATCH_FIELDS),
    "batches": 2,
    "last_batch": 2,
    "record_generation": 7,
    "generations": 1,
    "generation": 2,
    "set_generation_status": 4,
    "record_gap": 5,
    "gaps": 3,
    "pipelines": 0,
}


@pytest.mark.parametrize("name", PARAMETERS)
def test_every_query_runs_on_the_schema_with_its_parameters(name: str) -> None:
    connection = sqlite3.connect(":memory:")
    for statement in first_schema(SQLITE):
        connection.execute(statement)
    query = getattr(ledger_queries(SQLITE), name)
    # A valid generation status, which SQLite stores in a column of any type.
    connection.execute(query, ("planned",) * PARAMETERS[name])


def test_every_query_is_checked() -> None:
    assert {field.name for field in dataclasses.fields(ledger_queries(SQLITE))} == set(PARAMETERS)


def test_the_dialect_fills_in_tables_placeholders_and_types() -> None:
    postgres = dataclasses.replace(SQLITE, table_prefix="{schema}.", placeholder="%s")
    queries = ledger_queries(postgres)
    assert queries.generation.endswith(
        "FROM {schema}.generations WHERE pipeline = %s AND generation = %s"
    )
    assert "CAST(%s AS INTEGER) IS NULL" in queries.gaps
