from __future__ import annotations

import pytest

from pyspark_kafka_upgrade._adapters.ledger.store_errors import (
    refuse_newer_schema,
    translated_errors,
)
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    LedgerSchemaError,
    OffsetStoreError,
    OffsetStoreUnavailableError,
)
from pyspark_kafka_upgrade._domain.records.store import LEDGER_SCHEMA_VERSION

STORE = "offset store at /x"


class Unreachable(Exception):
    pass


class Refused(Exception):
    pass


def test_a_closed_store_refuses_before_doing_anything() -> None:
    done = []
    with (
        pytest.raises(OffsetStoreError, match=r"^the offset store at /x is closed$"),
        translated_errors(STORE, "reading", closed=True, unavailable=(Unreachable,)),
    ):
        done.append(1)
    assert done == []


def test_an_unreachable_store_is_unavailable_and_says_while_doing_what() -> None:
    with (
        pytest.raises(OffsetStoreUnavailableError) as raised,
        translated_errors(STORE, "reading", closed=False, unavailable=(Unreachable,)),
    ):
        raise Unreachable("timed out")
    assert str(raised.value) == "offset store at /x failed while reading: timed out"
    assert isinstance(raised.value.__cause__, Unreachable)


def test_other_failures_are_store_errors_in_the_reason_given() -> None:
    with (
        pytest.raises(OffsetStoreError) as raised,
        translated_errors(
            STORE,
            "writing",
            closed=False,
            unavailable=(Unreachable,),
            failed=(Refused,),
            reason=lambda exc: f"<{exc}>",
        ),
    ):
        raise Refused("no")
    assert type(raised.value) is OffsetStoreError
    assert str(raised.value) == "offset store at /x failed while writing: <no>"


def test_exceptions_of_no_listed_kind_pass_unchanged() -> None:
    with (
        pytest.raises(KeyError),
        translated_errors(STORE, "reading", closed=False, unavailable=(Unreachable,)),
    ):
        raise KeyError("bug")


def test_only_a_newer_schema_is_refused() -> None:
    refuse_newer_schema(STORE, LEDGER_SCHEMA_VERSION)
    with pytest.raises(LedgerSchemaError, match=r"^the offset store at /x has schema version"):
        refuse_newer_schema(STORE, LEDGER_SCHEMA_VERSION + 1)
