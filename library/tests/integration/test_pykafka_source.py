"""The pykafka source reads exactly the records the built-in Kafka source would.

Every test produces records with chosen partitions, keys, values and CreateTimes, runs a
streaming query and compares topic, partition, offset, key, value, timestamp and
timestampType of every row it delivered.
"""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
from confluent_kafka.admin import (  # type: ignore[attr-defined, unused-ignore]
    AdminClient,
    NewPartitions,
)
from pyspark.sql import SparkSession

import support.pykafka_streams as streams
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade.testing._kafka.topics import consume_all
from pyspark_kafka_upgrade.testing._waiting import wait_until

pytestmark = pytest.mark.integration

# Years old on purpose: the topics keep them only because of retention.ms=-1.
BASE_MS = int(datetime(2020, 3, 1, 12, 0, tzinfo=UTC).timestamp() * 1000)


def records(partitions: int, count: int, *, first: int = 0) -> list[testing.Record]:
    """Records spread over partitions, with null keys and values and out-of-order times."""
    made = []
    for i in range(first, first + count):
        key = None if i % 5 == 3 else f"key-{i % 4}".encode()
        value = None if i % 7 == 5 else f"value-{i}".encode()
        made.append(testing.Record(i % partitions, key, value, BASE_MS + (i * 37 % 101) * 1000 + i))
    return made


def new_topic(backend: testing.KafkaBackend, name: str, partitions: int) -> str:
    topic = testing.unique_topic(name)
    testing.create_topic(backend.bootstrap_servers, topic, partitions)
    return topic


def options(backend: testing.KafkaBackend, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": backend.bootstrap_servers, **extra}


def test_earliest_reads_every_record_exactly(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic = new_topic(kafka_backend, "earliest", 3)
    produced = records(3, 30)
    assert any(r.key is None for r in produced) and any(r.value is None for r in produced)
    testing.produce(kafka_backend.bootstrap_servers, topic, produced)

    run = streams.start_query(
        spark, options(kafka_backend, subscribe=topic, startingOffsets="earliest"), tmp_path
    )
    try:
        assert run.wait_for_rows(30) == streams.expected_rows(topic, produced)
    finally:
        run.stop()


def test_latest_reads_only_what_arrives_after_the_start(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic = new_topic(kafka_backend, "latest", 2)
    before = records(2, 6)
    after = records(2, 8, first=6)
    testing.produce(kafka_backend.bootstrap_servers, topic, before)

    run = streams.start_query(
        spark, options(kafka_backend, subscribe=topic, startingOffsets="latest"), tmp_path
    )
    try:
        location = streams.initial_offsets_file(tmp_path)
        wait_until(location.exists, timeout=60, message="initial offsets to be resolved")
        assert location.read_bytes() == b'\x00v1\n{"%s":{"0":3,"1":3}}' % topic.encode()
        testing.produce(kafka_backend.bootstrap_servers, topic, after)
        expected = streams.expected_rows(topic, after, first_offsets={0: 3, 1: 3})
        assert run.wait_for_rows(8) == expected
    finally:
        run.stop()


def test_json_offsets_mix_explicit_earliest_and_latest(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic = new_topic(kafka_backend, "json-offsets", 3)
    produced = records(3, 12)  # four per partition
    testing.produce(kafka_backend.bootstrap_servers, topic, produced)
    starting = json.dumps({topic: {"0": 2, "1": -2, "2": -1}})

    run = streams.start_query(
        spark, options(kafka_backend, subscribe=topic, startingOffsets=starting), tmp_path
    )
    try:
        wait_until(
            streams.initial_offsets_file(tmp_path).exists,
            timeout=60,
            message="initial offsets to be resolved",
        )
        later = records(3, 3, first=12)
        testing.produce(kafka_backend.bootstrap_servers, topic, later)
        first_offset = {0: 2, 1: 0, 2: 4}
        expected = [
            row
            for row in streams.expected_rows(topic, produced + later)
            if row.offset >= first_offset[row.partition]
        ]
        assert run.wait_for_rows(len(expected)) == expected
    finally:
        run.stop()


def test_two_topics(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    first = new_topic(kafka_backend, "two-a", 2)
    second = new_topic(kafka_backend, "two-b", 1)
    testing.produce(kafka_backend.bootstrap_servers, first, records(2, 5))
    testing.produce(kafka_backend.bootstrap_servers, second, records(1, 4, first=50))

    subscribe = f"{first}, {second}"
    run = streams.start_query(
        spark, options(kafka_backend, subscribe=subscribe, startingOffsets="earliest"), tmp_path
    )
    try:
        expected = sorted(
            streams.expected_rows(first, records(2, 5))
            + streams.expected_rows(second, records(1, 4, first=50))
        )
        assert run.wait_for_rows(9) == expected
    finally:
        run.stop()


def test_subscribe_pattern_reads_matching_topics_only(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    prefix = testing.unique_topic("pattern")
    matching = [f"{prefix}.views", f"{prefix}.clicks"]
    other = f"{prefix}-other"
    for name in [*matching, other]:
        testing.create_topic(kafka_backend.bootstrap_servers, name, 1)
        testing.produce(kafka_backend.bootstrap_servers, name, records(1, 3))

    pattern = prefix.replace("-", "\\-") + r"\..*"
    run = streams.start_query(
        spark,
        options(kafka_backend, subscribePattern=pattern, startingOffsets="earliest"),
        tmp_path,
    )
    try:
        expected = sorted(row for t in matching for row in streams.expected_rows(t, records(1, 3)))
        assert run.wait_for_rows(6) == expected
    finally:
        run.stop()


def test_a_partition_added_mid_stream_is_read_from_its_start(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = new_topic(kafka_backend, "added-partition", 2)
    before = records(2, 4)
    testing.produce(bootstrap, topic, before)
    run = streams.start_query(
        spark, options(kafka_backend, subscribe=topic, startingOffsets="earliest"), tmp_path
    )
    try:
        run.wait_for_rows(4)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=30)
        added = [testing.Record(2, b"k", f"new-{i}".encode(), BASE_MS + i) for i in range(3)]
        testing.produce(bootstrap, topic, added)
        expected = streams.expected_rows(topic, before + added)
        assert run.wait_for_rows(7) == expected
    finally:
        run.stop()


def test_a_restart_on_the_same_checkpoint_loses_and_repeats_nothing(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic = new_topic(kafka_backend, "restart", 2)
    first, second = records(2, 10), records(2, 6, first=10)
    testing.produce(kafka_backend.bootstrap_servers, topic, first)
    source_options = options(kafka_backend, subscribe=topic, startingOffsets="earliest")

    run = streams.start_query(spark, source_options, tmp_path)
    try:
        assert run.wait_for_rows(10) == streams.expected_rows(topic, first)
    finally:
        run.stop()
    testing.produce(kafka_backend.bootstrap_servers, topic, second)

    # startingOffsets only applies to a new checkpoint: "latest" here must change nothing.
    rerun = streams.start_query(spark, {**source_options, "startingOffsets": "latest"}, tmp_path)
    try:
        expected = streams.expected_rows(topic, second, first_offsets={0: 5, 1: 5})
        assert rerun.wait_for_rows(6) == expected
    finally:
        rerun.stop()


def test_headers_are_delivered_when_asked_for(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic = new_topic(kafka_backend, "headers", 1)
    with_headers = [
        testing.Record(0, b"k", b"v0", BASE_MS, (("trace", b"abc"), ("empty", None))),
        testing.Record(0, None, None, BASE_MS + 1),
        testing.Record(0, b"k", b"v2", BASE_MS + 2, (("dup", b"1"), ("dup", b"2"))),
    ]
    testing.produce(kafka_backend.bootstrap_servers, topic, with_headers)

    source_options = options(
        kafka_backend, subscribe=topic, startingOffsets="earliest", includeHeaders="true"
    )
    run = streams.start_query(spark, source_options, tmp_path, include_headers=True)
    try:
        plain = streams.expected_rows(topic, with_headers)
        expected = [
            dataclasses.replace(row, headers=record.headers)
            for row, record in zip(plain, with_headers, strict=True)
        ]
        assert run.wait_for_rows(3) == expected
    finally:
        run.stop()


def test_log_append_time_is_reported_as_the_built_in_source_does(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("log-append-time")
    testing.create_topic(bootstrap, topic, 1, config={"message.timestamp.type": "LogAppendTime"})
    testing.produce(bootstrap, topic, records(1, 3))
    # The broker chose the timestamps; a plain consumer says which.
    stored = consume_all(bootstrap, topic, expected_count=3)
    assert {record.timestamp_type for record in stored} == {TIMESTAMP_LOG_APPEND_TIME}

    run = streams.start_query(
        spark, options(kafka_backend, subscribe=topic, startingOffsets="earliest"), tmp_path
    )
    try:
        expected = [
            streams.SourceRow(
                topic,
                r.partition,
                r.offset,
                r.key,
                r.value,
                r.timestamp_ms * 1000,
                streams.LOG_APPEND_TIME_ID,
            )
            for r in stored
        ]
        assert run.wait_for_rows(3) == expected
    finally:
        run.stop()


@pytest.mark.parametrize(
    ("option", "value", "complaint"),
    [
        ("startingOffset", "earliest", "option 'startingoffset': is not an option of this source"),
        ("startingOffsets", "{not json", "option 'startingOffsets': startingOffsets is not valid"),
        ("maxOffsetsPerTrigger", "0", "option 'maxOffsetsPerTrigger': must be a positive number"),
        ("kafka.enable.auto.commit", "true", "the source never commits offsets to Kafka"),
    ],
)
def test_a_bad_option_stops_the_query_before_it_starts_and_is_named(
    spark: SparkSession, option: str, value: str, complaint: str
) -> None:
    streams.register(spark)
    reader = (
        spark.readStream.format(streams.FORMAT)
        .option("kafka.bootstrap.servers", "127.0.0.1:9")
        .option("subscribe", "views")
        .option(option, value)
    )
    with pytest.raises(Exception, match=re.escape(complaint)):
        reader.load()
