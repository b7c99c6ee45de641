"""The contract every offset store keeps, run against each store this project has.

Progress events reach the ledger asynchronously, may repeat, and arrive on a listener thread,
so upserts, ordering and thread safety are part of the contract, not details of one store.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

# Import layout that holds whatever the package is named: a straight import sorts before
# the package's from-imports, and trailing commas keep those exploded at any name length.
import support.offset_stores as stores
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
)
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    GenerationNotFoundError,
    LedgerRecordError,
    LedgerSchemaError,
    OffsetStoreError,
)
from pyspark_kafka_upgrade._domain.records.store import (
    LEDGER_SCHEMA_VERSION,
    OffsetStore,
)

# --- records -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        stores.make_batch(3),
        stores.make_batch(0, start_offsets=None, min_event_time_ms=None),
        stores.make_gap(9),
    ],
    ids=["batch", "first-batch", "gap"],
)
def test_records_round_trip_through_json(record: BatchRecord | LedgerGap) -> None:
    assert type(record).from_json(json.loads(json.dumps(record.to_json()))) == record


def test_generation_records_round_trip_through_json_and_accept_a_plain_status() -> None:
    record = stores.make_generation(2, status="running", plan={"to_generation": 2})
    assert record.status is GenerationStatus.RUNNING
    assert GenerationRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("batch_id", True, "'batch_id' must be an integer"),
        ("end_offsets", None, "'end_offsets' must be a string"),
        ("input_rows", "12", "'input_rows' must be an integer"),
    ],
)
def test_malformed_stored_records_are_rejected_by_field(
    field: str, value: object, message: str
) -> None:
    data = stores.make_batch(1).to_json() | {field: value}
    with pytest.raises(LedgerRecordError, match=message):
        BatchRecord.from_json(data)


# --- batches -------------------------------------------------------------------------------


def test_batches_round_trip_every_field_including_none(offset_store: OffsetStore) -> None:
    first = stores.make_batch(
        0, start_offsets=None, input_rows=0, min_event_time_ms=None, max_event_time_ms=None
    )
    second = stores.make_batch(1)
    offset_store.record_batch(first)
    offset_store.record_batch(second)

    assert offset_store.batches("page-views", 1) == [first, second]
    assert offset_store.last_batch("page-views", 1) == second


def test_record_batch_is_an_upsert_where_the_last_write_wins(offset_store: OffsetStore) -> None:
    original = stores.make_batch(5)
    replayed = stores.make_batch(5, run_id="another-run", input_rows=99, recorded_at_ms=2)
    offset_store.record_batch(original)
    offset_store.record_batch(original)  # a progress event delivered twice
    assert offset_store.batches("page-views", 1) == [original]

    offset_store.record_batch(replayed)
    assert offset_store.batches("page-views", 1) == [replayed]
    assert offset_store.last_batch("page-views", 1) == replayed


def test_batches_are_ordered_by_numeric_batch_id(offset_store: OffsetStore) -> None:
    ids = [10, 2, 100, 1, 11, 3, 20, 9]
    for batch_id in ids:
        offset_store.record_batch(stores.make_batch(batch_id))

    stored = [record.batch_id for record in offset_store.batches("page-views", 1)]
    assert stored == sorted(ids)
    last = offset_store.last_batch("page-views", 1)
    assert last is not None
    assert last.batch_id == 100


def test_batches_are_kept_apart_by_pipeline_and_generation(offset_store: OffsetStore) -> None:
    records = [
        stores.make_batch(0, pipeline="clicks", generation=1),
        stores.make_batch(1, pipeline="clicks", generation=2),
        stores.make_batch(2, pipeline="page-views", generation=1),
        stores.make_batch(3, pipeline="page-views", generation=2),
    ]
    for record in records:
        offset_store.record_batch(record)

    for record in records:
        assert offset_store.batches(record.pipeline, record.generation) == [record]
        assert offset_store.last_batch(record.pipeline, record.generation) == record
    assert offset_store.batches("clicks", 3) == []


def test_an_unknown_generation_has_no_batches(offset_store: OffsetStore) -> None:
    assert offset_store.batches("page-views", 1) == []
    assert offset_store.last_batch("page-views", 1) is None


# --- generations -----------------------------------------------------------------------------


def test_generations_round_trip_with_and_without_a_plan(offset_store: OffsetStore) -> None:
    first = stores.make_generation(1, status=GenerationStatus.RETIRED)
    plan = {"from_generation": 1, "to_generation": 2, "w_ms": 1_699_999_700_000, "ok": True}
    second = stores.make_generation(2, status=GenerationStatus.RUNNING, plan=plan)
    offset_store.record_generation(first)
    offset_store.record_generation(second)

    assert offset_store.generation("page-views", 1) == first
    assert offset_store.generation("page-views", 2) == second
    assert offset_store.generations("page-views") == [first, second]


def test_generations_are_ordered_and_upserted(offset_store: OffsetStore) -> None:
    for generation in (10, 2, 1):
        offset_store.record_generation(stores.make_generation(generation))
    running = stores.make_generation(2, status=GenerationStatus.RUNNING, updated_at_ms=5)
    offset_store.record_generation(running)

    stored = offset_store.generations("page-views")
    assert [record.generation for record in stored] == [1, 2, 10]
    assert stored[1] == running
    assert offset_store.generations("clicks") == []


def test_set_generation_status_changes_only_status_and_time(offset_store: OffsetStore) -> None:
    original = stores.make_generation(1, status=GenerationStatus.RUNNING)
    offset_store.record_generation(original)

    offset_store.set_generation_status(
        "page-views", 1, GenerationStatus.RETIRED, at_ms=1_800_000_000_000
    )

    expected = dataclasses.replace(
        original, status=GenerationStatus.RETIRED, updated_at_ms=1_800_000_000_000
    )
    assert offset_store.generation("page-views", 1) == expected


def test_an_unknown_generation_is_none_and_cannot_change_status(
    offset_store: OffsetStore,
) -> None:
    offset_store.record_generation(stores.make_generation(1))

    assert offset_store.generation("page-views", 2) is None
    with pytest.raises(GenerationNotFoundError) as raised:
        offset_store.set_generation_status("page-views", 2, GenerationStatus.RUNNING, at_ms=1)
    assert (raised.value.pipeline, raised.value.generation) == ("page-views", 2)
    assert "page-views" in str(raised.value)


# --- gaps and pipelines ----------------------------------------------------------------------


def test_gaps_round_trip_in_time_order_and_filter_by_generation(
    offset_store: OffsetStore,
) -> None:
    late = stores.make_gap(300, generation=2, batch_id=None, reason="no batch: ledger unreachable")
    early = stores.make_gap(100)
    same_time = stores.make_gap(100, batch_id=5)
    other_pipeline = stores.make_gap(200, pipeline="clicks")
    for gap in (late, early, same_time, other_pipeline):
        offset_store.record_gap(gap)

    all_gaps = offset_store.gaps("page-views")
    assert len(all_gaps) == 3  # gaps are appended, never merged
    assert [gap.recorded_at_ms for gap in all_gaps] == [100, 100, 300]
    assert sorted(all_gaps[:2], key=lambda gap: gap.batch_id or 0) == [early, same_time]
    assert all_gaps[2] == late
    assert sorted(offset_store.gaps("page-views", 1), key=lambda gap: gap.batch_id or 0) == [
        early,
        same_time,
    ]
    assert offset_store.gaps("page-views", 2) == [late]
    assert offset_store.gaps("page-views", 3) == []
    assert offset_store.gaps("clicks") == [other_pipeline]


def test_pipelines_lists_every_pipeline_with_any_record(offset_store: OffsetStore) -> None:
    assert offset_store.pipelines() == []

    offset_store.record_batch(stores.make_batch(0, pipeline="orders"))
    offset_store.record_generation(stores.make_generation(1, pipeline="clicks"))
    offset_store.record_gap(stores.make_gap(1, pipeline="page-views"))
    offset_store.record_batch(stores.make_batch(1, pipeline="clicks"))

    assert offset_store.pipelines() == ["clicks", "orders", "page-views"]


# --- the store as a whole -------------------------------------------------------------------


def test_a_second_store_on_the_same_location_sees_the_data(
    store_harness: stores.StoreHarness,
) -> None:
    writer = store_harness.open_store()
    writer.record_batch(stores.make_batch(0))
    writer.record_generation(stores.make_generation(1))
    reader = store_harness.open_store()  # the CLI, while the job still runs
    try:
        assert reader.batches("page-views", 1) == [stores.make_batch(0)]
        writer.record_batch(stores.make_batch(1))
        writer.record_gap(stores.make_gap(7))
        assert reader.last_batch("page-views", 1) == stores.make_batch(1)
        assert reader.gaps("page-views") == [stores.make_gap(7)]
    finally:
        reader.close()
        writer.close()

    with store_harness.open_store() as reopened:
        assert reopened.batches("page-views", 1) == [stores.make_batch(0), stores.make_batch(1)]
        assert reopened.generations("page-views") == [stores.make_generation(1)]


def test_concurrent_writers_lose_no_batch(offset_store: OffsetStore) -> None:
    threads, per_thread = 8, 50
    start = threading.Barrier(threads)

    def write(thread: int) -> None:
        start.wait()
        for index in range(per_thread):
            offset_store.record_batch(stores.make_batch(thread * per_thread + index))

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for future in [pool.submit(write, thread) for thread in range(threads)]:
            future.result()

    stored = offset_store.batches("page-views", 1)
    assert [record.batch_id for record in stored] == list(range(threads * per_thread))
    assert stored == [stores.make_batch(batch_id) for batch_id in range(threads * per_thread)]


def test_concurrent_first_opens_of_a_new_ledger_all_succeed(
    store_harness: stores.StoreHarness,
) -> None:
    def open_and_write(batch_id: int) -> int:
        with store_harness.open_store() as store:
            store.record_batch(stores.make_batch(batch_id))
            return store.schema_version()

    with ThreadPoolExecutor(max_workers=4) as pool:
        versions = list(pool.map(open_and_write, range(4)))

    assert versions == [LEDGER_SCHEMA_VERSION] * 4
    with store_harness.open_store() as store:
        assert [record.batch_id for record in store.batches("page-views", 1)] == [0, 1, 2, 3]


def test_schema_version_is_the_codes_version(offset_store: OffsetStore) -> None:
    assert offset_store.schema_version() == LEDGER_SCHEMA_VERSION


def test_a_ledger_with_a_newer_schema_is_refused(store_harness: stores.StoreHarness) -> None:
    store_harness.open_store().close()
    store_harness.set_schema_version(LEDGER_SCHEMA_VERSION + 1)

    with pytest.raises(LedgerSchemaError, match=f"schema version {LEDGER_SCHEMA_VERSION + 1}"):
        store_harness.open_store()


def test_describe_names_the_location(
    store_harness: stores.StoreHarness, offset_store: OffsetStore
) -> None:
    description = offset_store.describe()
    assert store_harness.location in description
    assert "\n" not in description


def test_a_closed_store_refuses_work_and_closes_twice(store_harness: stores.StoreHarness) -> None:
    with store_harness.open_store() as store:
        store.record_batch(stores.make_batch(0))
    store.close()

    with pytest.raises(OffsetStoreError, match="closed"):
        store.record_batch(stores.make_batch(1))
    with pytest.raises(OffsetStoreError, match="closed"):
        store.batches("page-views", 1)
