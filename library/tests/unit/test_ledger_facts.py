"""ledger_facts: every record's facts, with the cyclic GC paused and restored."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pyspark_kafka_upgrade._domain.records.history import BatchFacts, ledger_facts
from pyspark_kafka_upgrade._domain.records.record_errors import InconsistentInputsError
from support.offset_stores import make_batch


@pytest.fixture(autouse=True)
def gc_as_it_was() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_the_facts_are_each_records_in_order() -> None:
    records = [make_batch(batch_id) for batch_id in (3, 1, 2)]

    facts = ledger_facts(records)

    assert facts == tuple(BatchFacts.from_record(record) for record in records)
    assert [fact.batch_id for fact in facts] == [3, 1, 2]


def test_the_gc_is_paused_while_parsing_and_enabled_again_after() -> None:
    seen: list[bool] = []

    def records() -> Iterator[object]:
        seen.append(gc.isenabled())
        yield make_batch(0)

    gc.enable()
    ledger_facts(records())  # type: ignore[arg-type]  # a generator, to look inside

    assert seen == [False]
    assert gc.isenabled()


def test_a_bad_record_still_gives_the_gc_back() -> None:
    gc.enable()
    with pytest.raises(InconsistentInputsError):
        ledger_facts([make_batch(0, min_event_time_ms=None)])
    assert gc.isenabled()


def test_a_gc_someone_disabled_stays_disabled() -> None:
    gc.disable()
    ledger_facts([make_batch(0)])
    assert not gc.isenabled()
