"""``read_records`` (the scan's reader) reads exactly what ``read_range`` reads, on real Kafka.

The topic has gaps: each committed or aborted transaction ends with a control record, which
no reader delivers, so offsets jump inside a range and at its end. (Aborted records are read,
as the built-in source reads them with Kafka's default isolation, read_uncommitted.) Every
range over it, read both ways, gives the same offsets, values and timestamps (in the
microseconds Spark's column holds), in batches cut small so that batch ends fall anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.kafka import partition_reader
from pyspark_kafka_upgrade._adapters.kafka.options import SourceOptions, parse_options
from pyspark_kafka_upgrade._adapters.kafka.partition_reader import read_range, read_records
from pyspark_kafka_upgrade._adapters.kafka.ranges import OffsetRange

pytestmark = pytest.mark.integration

BASE_MS = 1_795_000_000_000
Read = list[tuple[int, bytes | None, int]]


@pytest.fixture(scope="module")
def gapped_topic(kafka_backend: testing.KafkaBackend) -> Iterator[tuple[str, int]]:
    """Plain records, a committed transaction, an aborted one, more plain records, and a
    committed transaction last, so the partition ends on a control record. Its end offset."""
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("gapped")
    testing.create_topic(bootstrap, topic, 1)
    testing.produce(
        bootstrap, topic, [testing.Record(0, None, b"plain-%d" % i, BASE_MS + i) for i in range(5)]
    )
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    for name, count, commit in (("committed", 3, True), ("aborted", 4, False)):
        producer.begin_transaction()
        for i in range(count):
            producer.produce(
                topic, value=b"%s-%d" % (name.encode(), i), partition=0, timestamp=BASE_MS + 100 + i
            )
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    testing.produce(
        bootstrap, topic, [testing.Record(0, b"k", None, BASE_MS + 200 + i) for i in range(3)]
    )
    producer.begin_transaction()
    producer.produce(topic, value=b"last", partition=0, timestamp=BASE_MS + 300)
    producer.commit_transaction(30)
    # 5 plain, 3 + marker, 4 aborted + marker, 3 plain, 1 + marker.
    yield topic, 5 + 4 + 5 + 3 + 2


def options(backend: testing.KafkaBackend, topic: str) -> SourceOptions:
    return parse_options({"kafka.bootstrap.servers": backend.bootstrap_servers, "subscribe": topic})


def by_arrow(source: SourceOptions, offsets: OffsetRange) -> Read:
    read: Read = []
    for batch in read_range(source, offsets):
        stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
        read += zip(
            batch.column("offset").to_pylist(),
            batch.column("value").to_pylist(),
            stamps,
            strict=True,
        )
    return read


def by_lists(source: SourceOptions, offsets: OffsetRange) -> Read:
    read: Read = []
    for batch in read_records(source, offsets):
        assert len(batch.offsets) == len(batch.values) == len(batch.timestamps_ms)
        read += zip(
            batch.offsets, batch.values, [ms * 1000 for ms in batch.timestamps_ms], strict=True
        )
    return read


def test_the_scans_reader_reads_what_read_range_reads(
    kafka_backend: testing.KafkaBackend,
    gapped_topic: tuple[str, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic, end = gapped_topic
    source = options(kafka_backend, topic)
    whole = by_arrow(source, OffsetRange(topic, 0, 0, end))
    # The control records are not read: offsets jump over them.
    assert [value for _, value, _ in whole] == [
        *(b"plain-%d" % i for i in range(5)),
        *(b"committed-%d" % i for i in range(3)),
        *(b"aborted-%d" % i for i in range(4)),
        None,
        None,
        None,
        b"last",
    ]
    assert [offset for offset, _, _ in whole] == [*range(8), *range(9, 13), *range(14, 18)]
    # Batches of 2 records: their ends fall before, inside and after each gap.
    monkeypatch.setattr(partition_reader, "BATCH_RECORDS", 2)
    # Each end of each gap, and an offset on either side of it.
    edges = [0, 1, 4, 5, 7, 8, 9, 12, 13, 14, 16, 17, 18, 19]
    for start in edges[:-1]:
        for stop in (edge for edge in edges if edge >= start):
            offsets = OffsetRange(topic, 0, start, stop)
            expected = [record for record in whole if start <= record[0] < stop]
            assert by_arrow(source, offsets) == expected, (start, stop)
            assert by_lists(source, offsets) == expected, (start, stop)
