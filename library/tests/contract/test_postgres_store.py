"""What only the PostgreSQL offset store promises: redaction, a safe schema, reconnection."""

from __future__ import annotations

import traceback
import uuid

import pytest

# Import layout that holds whatever the package is named: a straight import sorts before
# the package's from-imports, and trailing commas keep those exploded at any name length.
import support.offset_stores as stores
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    OffsetStoreError,
    OffsetStoreUnavailableError,
)

PASSWORD = "s3cr3t-ledger-pw"


def test_postgres_describe_never_shows_the_password(
    postgres_dsn: str, postgres_harness: stores.StoreHarness
) -> None:
    # Trust and peer authentication ignore a password, so one can be added to test redaction.
    password = stores.postgres_dsn_options(postgres_dsn).get("password", PASSWORD)
    dsn = stores.postgres_dsn_with(postgres_dsn, password=password)
    with stores.store_class("postgres")(dsn, schema=postgres_harness.location) as store:
        assert password not in store.describe()
        assert "password=***" in store.describe()


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://ledger_user:{PASSWORD}@127.0.0.1:1/ledger?connect_timeout=5",
        f"host=127.0.0.1 port=1 user=ledger_user password={PASSWORD} dbname=ledger",
        f"host=127.0.0.1 port=1 user=ledger_user password='{PASSWORD} x' dbname=ledger",
    ],
    ids=["url", "key-value", "quoted"],
)
def test_postgres_unreachable_server_error_is_redacted(dsn: str) -> None:
    with pytest.raises(OffsetStoreUnavailableError) as raised:
        stores.store_class("postgres")(dsn)

    message = str(raised.value)
    assert "127.0.0.1" in message
    assert "***" in message
    assert "\n" not in message
    assert PASSWORD not in "".join(traceback.format_exception(raised.value))


def test_postgres_invalid_dsn_error_is_redacted() -> None:
    with pytest.raises(OffsetStoreError) as raised:
        stores.store_class("postgres")(f"host=127.0.0.1 password={PASSWORD} not-a-pair")
    assert PASSWORD not in "".join(traceback.format_exception(raised.value))


def test_postgres_schema_must_be_a_plain_identifier() -> None:
    with pytest.raises(ValueError, match="plain lower-case SQL identifier"):
        stores.store_class("postgres")(
            "postgresql://127.0.0.1:1/x", schema='ledger"; DROP TABLE x; --'
        )


def test_postgres_store_reconnects_after_its_connection_is_killed(
    postgres_dsn: str, postgres_harness: stores.StoreHarness
) -> None:
    application = f"ledger-test-{uuid.uuid4().hex}"
    dsn = stores.postgres_dsn_with(postgres_dsn, application_name=application)
    with stores.store_class("postgres")(dsn, schema=postgres_harness.location) as store:
        store.record_batch(stores.make_batch(0))
        stores.postgres_execute(
            postgres_dsn,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            params=(application,),
        )

        # The call that finds the connection dead fails; the store lets the caller record a
        # gap, then works again on a new connection.
        with pytest.raises(OffsetStoreUnavailableError):
            store.record_batch(stores.make_batch(1))
        store.record_batch(stores.make_batch(2))
        assert [record.batch_id for record in store.batches("page-views", 1)] == [0, 2]
