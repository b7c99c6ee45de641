"""Every offset store this project has, opened on a fresh location for each test."""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

# Import layout that holds whatever the package is named: a straight import sorts before
# the package's from-imports, and trailing commas keep those exploded at any name length.
import support.offset_stores as stores
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    OffsetStoreUnavailableError,
)
from pyspark_kafka_upgrade._domain.records.store import (
    OffsetStore,
)

POSTGRES_DSN_VARIABLE = "LEDGER_TEST_POSTGRES_DSN"
# No user: libpq then connects as the operating-system user, as psql does.
DEFAULT_POSTGRES_DSN = "postgresql://127.0.0.1:5432/test"


@pytest.fixture(params=stores.STORE_KINDS)
def store_harness(request: pytest.FixtureRequest) -> stores.StoreHarness:
    harness: stores.StoreHarness = request.getfixturevalue(f"{request.param}_harness")
    return harness


@pytest.fixture
def offset_store(store_harness: stores.StoreHarness) -> Iterator[OffsetStore]:
    store = store_harness.open_store()
    yield store
    store.close()


@pytest.fixture
def sqlite_harness(tmp_path: Path) -> stores.StoreHarness:
    cls = stores.store_class("sqlite")
    path = tmp_path / "ledger" / "ledger.sqlite"

    def set_schema_version(version: int) -> None:
        with sqlite3.connect(path) as connection:
            connection.execute("INSERT INTO schema_version VALUES (?, 0)", (version,))
        connection.close()

    return stores.StoreHarness("sqlite", lambda: cls(path), set_schema_version, str(path))


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    """A DSN whose server is reachable and lets this user create schemas, or a skip."""
    cls = stores.store_class("postgres")
    dsn = os.environ.get(POSTGRES_DSN_VARIABLE, DEFAULT_POSTGRES_DSN)
    schema = _unique_schema()
    try:
        cls(dsn, schema=schema).close()
    except OffsetStoreUnavailableError as exc:
        pytest.skip(
            f"{exc} -- set {POSTGRES_DSN_VARIABLE} to the DSN of a PostgreSQL server where "
            "this user may create schemas to run the PostgreSQL offset store contract"
        )
    _drop_schema(dsn, schema)
    return dsn


@pytest.fixture
def postgres_harness(postgres_dsn: str) -> Iterator[stores.StoreHarness]:
    cls = stores.store_class("postgres")
    schema = _unique_schema()

    def set_schema_version(version: int) -> None:
        stores.postgres_execute(
            postgres_dsn,
            "INSERT INTO {}.schema_version VALUES (%s, 0)",
            schema=schema,
            params=(version,),
        )

    yield stores.StoreHarness(
        "postgres", lambda: cls(postgres_dsn, schema=schema), set_schema_version, schema
    )
    _drop_schema(postgres_dsn, schema)


def _unique_schema() -> str:
    return f"ledger_test_{uuid.uuid4().hex[:16]}"


def _drop_schema(dsn: str, schema: str) -> None:
    stores.postgres_execute(dsn, "DROP SCHEMA IF EXISTS {} CASCADE", schema=schema)


@pytest.fixture
def filesystem_root(tmp_path: Path) -> Path:
    return tmp_path / "ledger"


@pytest.fixture
def filesystem_harness(
    filesystem_root: Path, request: pytest.FixtureRequest
) -> stores.StoreHarness:
    cls = stores.store_class("filesystem")
    # Requested here, not as a parameter, so a run without this store never starts Spark.
    spark: SparkSession = request.getfixturevalue("spark")
    root_uri = filesystem_root.as_uri()

    def set_schema_version(version: int) -> None:
        (filesystem_root / "_schema.json").write_text(json.dumps({"version": version}))
        # Hadoop's local filesystem would reject the edited file against its old checksum.
        (filesystem_root / "._schema.json.crc").unlink(missing_ok=True)

    return stores.StoreHarness(
        "filesystem", lambda: cls(spark, root_uri), set_schema_version, str(filesystem_root)
    )
