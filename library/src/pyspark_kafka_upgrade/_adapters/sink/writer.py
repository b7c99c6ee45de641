"""Appending a streaming query to a file sink: the one place a file sink query starts.

Append mode writes a window once, when the watermark passes its end, and never rewrites it;
the sink's ``_spark_metadata`` log names the files of committed batches, which makes the
output exactly-once for readers that go through it (see ``layout``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pyspark_kafka_upgrade._domain.records.sink import Trigger
from pyspark_kafka_upgrade._domain.values.catalog import SinkFormat

__all__ = ["start_file_sink", "triggered"]


def start_file_sink(
    frame: DataFrame,
    *,
    query_name: str,
    path: str,
    checkpoint: str,
    file_format: SinkFormat,
    trigger: Trigger,
) -> StreamingQuery:
    writer = (
        frame.writeStream.queryName(query_name)
        .format(file_format)
        .outputMode("append")
        .option("path", path)
        .option("checkpointLocation", checkpoint)
    )
    return triggered(writer, trigger).start()


def triggered(writer: DataStreamWriter, trigger: Trigger) -> DataStreamWriter:
    """``writer`` with ``trigger``: every sink's queries run on the settings' trigger."""
    if trigger.available_now:
        return writer.trigger(availableNow=True)
    if trigger.interval:
        return writer.trigger(processingTime=trigger.interval)
    return writer
