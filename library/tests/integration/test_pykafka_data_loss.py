"""Offsets that are gone: failOnDataLoss=true fails the query and says what is missing,
failOnDataLoss=false logs a warning and goes on with what is still there."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined, unused-ignore]
    AdminClient,
    NewTopic,
)
from pyspark.sql import SparkSession

import support.pykafka_streams as streams
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade.testing._waiting import wait_until

pytestmark = pytest.mark.integration

OLD_MS = int(datetime(2020, 1, 1, tzinfo=UTC).timestamp() * 1000)
AGED_OUT = 5


def low_watermark(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "low-watermark-probe"})
    try:
        low, _ = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=10, cached=False
        )
        return int(low)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def aged_out_topic(
    kafka_backend: testing.KafkaBackend,
) -> Iterator[tuple[str, list[testing.Record]]]:
    """A topic whose first records retention has deleted, then two records that remain.

    Made with the admin client, not the test helper, because it needs the default retention
    (7 days): noida-db deletes the 2020 records within seconds, a real "retention deleted
    records the query had not read" case. Real Kafka deletes as lazily as its segments roll.
    """
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("aged-out")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(
        timeout=30
    )
    wait_until(
        lambda: topic in admin.list_topics(timeout=5).topics,
        timeout=30,
        message=f"topic {topic} to exist",
    )
    old = [testing.Record(0, b"old", b"%d" % i, OLD_MS + i) for i in range(AGED_OUT)]
    testing.produce(bootstrap, topic, old)
    wait_until(
        lambda: low_watermark(bootstrap, topic, 0) == AGED_OUT,
        timeout=60,
        interval=0.5,
        message=f"retention to delete the {AGED_OUT} records of 2020 from {topic}",
    )
    now_ms = int(time.time() * 1000)
    kept = [testing.Record(0, b"new", b"%d" % i, now_ms + i) for i in range(2)]
    testing.produce(bootstrap, topic, kept)
    yield topic, kept


def from_offset_zero(backend: testing.KafkaBackend, topic: str, fail: bool) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": backend.bootstrap_servers,
        "subscribe": topic,
        # As a checkpoint or a plan would, after retention deleted what it had not read.
        "startingOffsets": json.dumps({topic: {"0": 0}}),
        "failOnDataLoss": str(fail).lower(),
    }


def test_records_deleted_by_retention_fail_the_query(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    aged_out_topic: tuple[str, list[testing.Record]],
    tmp_path: Path,
) -> None:
    topic, _ = aged_out_topic
    run = streams.start_query(spark, from_offset_zero(kafka_backend, topic, True), tmp_path)
    try:
        message = run.wait_for_failure()
    finally:
        run.stop()
    assert "DataLossError" in message
    assert f"topic '{topic}' partition 0: cannot fetch offsets 0 to 4; " in message
    assert "the earliest available offset is 5" in message
    assert 'set the source option "failOnDataLoss" to "false"' in message
    assert run.rows() == []


def test_records_deleted_by_retention_are_skipped_without_fail_on_data_loss(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    aged_out_topic: tuple[str, list[testing.Record]],
    tmp_path: Path,
) -> None:
    topic, kept = aged_out_topic
    run = streams.start_query(spark, from_offset_zero(kafka_backend, topic, False), tmp_path)
    try:
        expected = streams.expected_rows(topic, kept, first_offsets={0: AGED_OUT})
        assert run.wait_for_rows(2) == expected
    finally:
        run.stop()


def beyond_the_end(
    backend: testing.KafkaBackend, fail: bool
) -> tuple[str, dict[str, str], list[testing.Record]]:
    """A topic of 5 records and options that start it at offset 50."""
    topic = testing.unique_topic("beyond-end")
    testing.create_topic(backend.bootstrap_servers, topic, 1)
    produced = [testing.Record(0, None, b"%d" % i, OLD_MS + i) for i in range(5)]
    testing.produce(backend.bootstrap_servers, topic, produced)
    source_options = {
        "kafka.bootstrap.servers": backend.bootstrap_servers,
        "subscribe": topic,
        "startingOffsets": json.dumps({topic: {"0": 50}}),
        "failOnDataLoss": str(fail).lower(),
    }
    return topic, source_options, produced


def test_an_offset_beyond_the_end_fails_the_query(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic, source_options, _ = beyond_the_end(kafka_backend, fail=True)
    run = streams.start_query(spark, source_options, tmp_path)
    try:
        message = run.wait_for_failure()
    finally:
        run.stop()
    assert f"topic '{topic}' partition 0's offset was changed from 50 to 5" in message
    assert run.rows() == []


def test_an_offset_beyond_the_end_is_skipped_without_fail_on_data_loss(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic, source_options, _ = beyond_the_end(kafka_backend, fail=False)
    run = streams.start_query(spark, source_options, tmp_path)
    try:
        # The first batch runs from 50 to 5: it reads nothing and the query goes on from 5.
        wait_until(
            lambda: (tmp_path / "commits" / "0").exists(),
            timeout=streams.QUERY_TIMEOUT_S,
            message="the first batch to commit",
        )
        later = [testing.Record(0, b"k", b"later-%d" % i, OLD_MS + 100 + i) for i in range(3)]
        testing.produce(kafka_backend.bootstrap_servers, topic, later)
        expected = streams.expected_rows(topic, later, first_offsets={0: 5})
        assert run.wait_for_rows(3) == expected
    finally:
        run.stop()
