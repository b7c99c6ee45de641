"""The Kafka test backend stores and returns records exactly: partitions, offsets, keys,
values and producer-chosen CreateTimes, including timestamps years in the past."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from support.kafka_backends import (
    CREATE_TIME,
    ConsumedRecord,
    KafkaBackend,
    Record,
    consume_all,
    create_topic,
    produce,
    topic_config,
    unique_topic,
)

pytestmark = pytest.mark.integration

PARTITIONS = 3
RECORD_COUNT = 30
# 2020 is far beyond the 7-day default retention: without retention.ms=-1 on the topic,
# noida-db would delete these records before they could be read back.
BASE_TIMESTAMP_MS = int(datetime(2020, 3, 1, 12, 0, tzinfo=UTC).timestamp() * 1000)


def make_records() -> list[Record]:
    records = []
    for i in range(RECORD_COUNT):
        partition = (i * 7) % PARTITIONS
        # 13 is coprime to 30, so the timestamps are a permutation: out of order, no repeats.
        timestamp_ms = BASE_TIMESTAMP_MS + ((i * 13) % RECORD_COUNT) * 60_000 + i
        key = None if i % 10 == 4 else f"key-{i % 4}".encode()
        value = None if i == 17 else f"value-{i}".encode()
        records.append(Record(partition, key, value, timestamp_ms))
    return records


def test_records_round_trip_exactly(kafka_backend: KafkaBackend) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = unique_topic("smoke")
    records = make_records()
    # Guard the test's own premise: it must exercise null keys and out-of-order timestamps.
    assert any(r.key is None for r in records)
    for partition in range(PARTITIONS):
        times = [r.timestamp_ms for r in records if r.partition == partition]
        assert times != sorted(times)

    create_topic(bootstrap, topic, PARTITIONS)
    # The broker's cleanup runs every few seconds, so a fast test can pass without the guard;
    # check the setting itself rather than rely on the timing.
    assert topic_config(bootstrap, topic)["retention.ms"] == "-1"
    produce(bootstrap, topic, records)
    consumed = consume_all(bootstrap, topic, expected_count=len(records), timeout=30)

    expected = []
    next_offset = dict.fromkeys(range(PARTITIONS), 0)
    for r in records:
        expected.append(
            ConsumedRecord(
                topic=topic,
                partition=r.partition,
                offset=next_offset[r.partition],
                key=r.key,
                value=r.value,
                timestamp_ms=r.timestamp_ms,
                timestamp_type=CREATE_TIME,
            )
        )
        next_offset[r.partition] += 1
    assert CREATE_TIME == 1
    assert consumed == sorted(expected, key=lambda c: (c.partition, c.offset))
