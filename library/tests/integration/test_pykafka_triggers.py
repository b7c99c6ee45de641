"""maxOffsetsPerTrigger and Trigger.AvailableNow, batch by batch.

PySpark 4.2 added read limits to Python data sources; on 4.0 and 4.1 the source applies
maxOffsetsPerTrigger itself and AvailableNow runs a single batch.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

import support.pykafka_streams as streams
from pyspark_kafka_upgrade import testing

pytestmark = pytest.mark.integration

BASE_MS = int(datetime(2021, 6, 1, tzinfo=UTC).timestamp() * 1000)
HAS_READ_LIMITS = tuple(int(part) for part in pyspark.__version__.split(".")[:2]) >= (4, 2)


def backlog_of_30_and_10(backend: testing.KafkaBackend) -> tuple[str, list[testing.Record]]:
    """A topic whose partitions hold 30 and 10 records: batches of 8 take 6 and 2."""
    topic = testing.unique_topic("rate-limit")
    testing.create_topic(backend.bootstrap_servers, topic, 2)
    produced = [testing.Record(0, None, b"%d" % i, BASE_MS + i) for i in range(30)]
    produced += [testing.Record(1, b"k", b"%d" % i, BASE_MS + i) for i in range(10)]
    testing.produce(backend.bootstrap_servers, topic, produced)
    return topic, produced


def rate_limited(backend: testing.KafkaBackend, topic: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": backend.bootstrap_servers,
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "8",
    }


def test_max_offsets_per_trigger_splits_each_batch_by_backlog(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic, produced = backlog_of_30_and_10(kafka_backend)
    run = streams.start_query(spark, rate_limited(kafka_backend, topic), tmp_path)
    try:
        assert run.wait_for_rows(40) == streams.expected_rows(topic, produced)
        assert run.batch_sizes() == [8] * 5
        progress_rows = [p["numInputRows"] for p in run.query.recentProgress if p["numInputRows"]]
        assert progress_rows == [8] * 5
        ends = [json.loads(run.source_offsets(batch)) for batch in range(5)]
        assert ends == [{topic: {"0": 6 * n, "1": 2 * n}} for n in range(1, 6)]
        if HAS_READ_LIMITS:  # the source reports the brokers' latest offsets: the lag
            first = next(p for p in run.query.recentProgress if p["numInputRows"])
            assert json.loads(first["sources"][0]["latestOffset"]) == {topic: {"0": 30, "1": 10}}
    finally:
        run.stop()


def test_available_now_reads_everything_there_and_stops(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic, produced = backlog_of_30_and_10(kafka_backend)
    source_options = rate_limited(kafka_backend, topic)
    del source_options["maxOffsetsPerTrigger"]
    run = streams.start_query(spark, source_options, tmp_path, available_now=True)
    assert run.query.awaitTermination(streams.QUERY_TIMEOUT_S), "AvailableNow did not stop"
    assert run.query.exception() is None
    assert run.rows() == streams.expected_rows(topic, produced)
    assert run.batch_sizes() == [40]


def test_available_now_honours_max_offsets_per_trigger_across_batches(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    topic, produced = backlog_of_30_and_10(kafka_backend)
    run = streams.start_query(
        spark, rate_limited(kafka_backend, topic), tmp_path, available_now=True
    )
    assert run.query.awaitTermination(streams.QUERY_TIMEOUT_S), "AvailableNow did not stop"
    assert run.query.exception() is None
    if HAS_READ_LIMITS:
        assert run.rows() == streams.expected_rows(topic, produced)
        assert run.batch_sizes() == [8] * 5
    else:  # one batch, bounded by the limit the source applies itself
        assert run.batch_sizes() == [8]
