"""Event times of a partition's records, read exactly as the job parses them.

The planner tightens each partition's restart to its first record that can feed an open
window. That record's event time must be the one the job would compute, so the scan reads
the raw records with the source's own range reader and runs them through the job's own
``parse_events`` on a static DataFrame.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .. import transformations
from ..offsets import PartitionKey
from ..settings import Settings
from ..source.connector import kafka_read_options
from ..source.options import parse_options
from ..source.partition_reader import read_range
from ..source.ranges import OffsetRange
from ..source.schema import spark_schema


def event_times(
    spark: SparkSession, settings: Settings, partition: PartitionKey, start: int, end: int
) -> list[tuple[int, int | None]]:
    """(offset, event time in ms, None when malformed) of offsets [start, end), in order."""
    if start >= end:
        return []
    options = parse_options(kafka_read_options(settings.kafka))
    topic, number = partition
    batches = list(read_range(options, OffsetRange(topic, number, start, end)))
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    raw = spark.createDataFrame(table, schema=spark_schema(include_headers=False))
    parsed = transformations.parse_events(
        raw,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )
    rows = (
        parsed.select(
            "offset",
            F.when(
                F.col(transformations.MALFORMED_REASON).isNull(),
                # Floor to the millisecond, as the ledger's minimum event time is.
                F.floor(F.unix_micros(F.col(transformations.EVENT_TIME)) / 1000),
            ).alias("event_ms"),
        )
        .orderBy("offset")
        .collect()
    )
    return [(int(row.offset), None if row.event_ms is None else int(row.event_ms)) for row in rows]
