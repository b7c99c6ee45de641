"""Run the ``pykafka`` source into a sink that keeps every batch, and say what it should hold.

The sink is ``foreachBatch``: it runs in this process, keeps each batch's rows under its
batch id (a replayed batch replaces its first run, as a file sink's commit log does), and
so lets a test assert exact records and exact batch boundaries.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from pyspark_kafka_upgrade._adapters.kafka.pykafka import (
    PyKafkaDataSource,
)
from pyspark_kafka_upgrade.testing._kafka.topics import Headers, Record
from pyspark_kafka_upgrade.testing._waiting import wait_until

FORMAT = PyKafkaDataSource.name()
# Java's TimestampType id for CreateTime, which the built-in source also writes.
CREATE_TIME_ID = 0
LOG_APPEND_TIME_ID = 1
QUERY_TIMEOUT_S = 60


@dataclass(frozen=True, order=True)
class SourceRow:
    """One row as the source produced it; the timestamp in microseconds since the epoch."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_us: int
    timestamp_type: int
    headers: Headers | None = None


@dataclass
class CollectedQuery:
    """A running query and the rows its batches delivered, by batch id."""

    query: StreamingQuery
    checkpoint: Path
    batches: dict[int, list[SourceRow]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def rows(self) -> list[SourceRow]:
        with self.lock:
            return sorted(row for rows in self.batches.values() for row in rows)

    def batch_sizes(self) -> list[int]:
        with self.lock:
            return [len(self.batches[batch_id]) for batch_id in sorted(self.batches)]

    def wait_for_rows(self, count: int, timeout: float = QUERY_TIMEOUT_S) -> list[SourceRow]:
        """Wait until ``count`` rows arrived and the query has nothing more to read."""

        def arrived() -> bool:
            failure = self.query.exception()
            if failure is not None:
                raise AssertionError(f"the query failed: {failure}")
            return len(self.rows()) >= count

        wait_until(arrived, timeout=timeout, message=f"{count} rows from the pykafka source")
        # Returns at once when caught up; a surplus row would show in the assertion after.
        self.query.processAllAvailable()
        return self.rows()

    def wait_for_failure(self, timeout: float = QUERY_TIMEOUT_S) -> str:
        """The message the query failed with."""

        def failure() -> str | None:
            error = self.query.exception()
            return None if error is None else str(error)

        return wait_until(failure, timeout=timeout, message="the query to fail")

    def source_offsets(self, batch_id: int) -> str:
        """The source's end offsets of one batch as the checkpoint stores them."""
        lines = (self.checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
        return lines[2]

    def stop(self) -> None:
        self.query.stop()


def start_query(
    spark: SparkSession,
    options: Mapping[str, str],
    checkpoint: Path,
    *,
    available_now: bool = False,
    include_headers: bool = False,
) -> CollectedQuery:
    """Start a query from the pykafka source; the checkpoint keeps the initial offsets too."""
    register(spark)
    reader = spark.readStream.format(FORMAT).option(
        "initialOffsetsLocation", str(initial_offsets_file(checkpoint))
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    columns: list[Column | str] = [
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        F.unix_micros("timestamp").alias("timestamp_us"),
        "timestampType",
    ]
    if include_headers:
        columns.append("headers")
    frame = reader.load().select(*columns)
    batches: dict[int, list[SourceRow]] = {}
    lock = threading.Lock()

    def keep(batch: DataFrame, batch_id: int) -> None:
        rows = [_source_row(row.asDict(), include_headers) for row in batch.collect()]
        with lock:
            batches[batch_id] = rows

    writer = frame.writeStream.foreachBatch(keep).option("checkpointLocation", str(checkpoint))
    writer = writer.trigger(availableNow=True) if available_now else writer
    return CollectedQuery(writer.start(), checkpoint, batches, lock)


def register(spark: SparkSession) -> None:
    """Make ``format("pykafka")`` known to the session (registering again is harmless)."""
    spark.dataSource.register(PyKafkaDataSource)


def initial_offsets_file(checkpoint: Path) -> Path:
    """Where the built-in source keeps its initial offsets, and so where jobs put ours."""
    return checkpoint / "sources" / "0" / "0"


def _source_row(row: dict[str, Any], include_headers: bool) -> SourceRow:
    headers = None
    if include_headers and row["headers"] is not None:
        headers = tuple((h["key"], _bytes(h["value"])) for h in row["headers"])
    return SourceRow(
        topic=row["topic"],
        partition=row["partition"],
        offset=row["offset"],
        key=_bytes(row["key"]),
        value=_bytes(row["value"]),
        timestamp_us=row["timestamp_us"],
        timestamp_type=row["timestampType"],
        headers=headers,
    )


def _bytes(value: bytes | bytearray | None) -> bytes | None:
    return None if value is None else bytes(value)


def expected_rows(
    topic: str,
    records: Sequence[Record],
    *,
    first_offsets: Mapping[int, int] | None = None,
    timestamp_type: int = CREATE_TIME_ID,
) -> list[SourceRow]:
    """The rows of ``records`` once produced in order, each partition starting at its offset."""
    next_offset = dict(first_offsets or {})
    rows = []
    for record in records:
        offset = next_offset.get(record.partition, 0)
        next_offset[record.partition] = offset + 1
        rows.append(
            SourceRow(
                topic=topic,
                partition=record.partition,
                offset=offset,
                key=record.key,
                value=record.value,
                timestamp_us=record.timestamp_ms * 1000,
                timestamp_type=timestamp_type,
            )
        )
    return sorted(rows)
