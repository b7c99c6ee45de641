"""The rows the source produces: the built-in Kafka source's schema, in Spark and in Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
)

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# The column holds Java's TimestampType ids, as the built-in source writes them; librdkafka
# numbers the same kinds differently.
TIMESTAMP_TYPE_IDS = {
    TIMESTAMP_NOT_AVAILABLE: -1,
    TIMESTAMP_CREATE_TIME: 0,
    TIMESTAMP_LOG_APPEND_TIME: 1,
}


def spark_schema(include_headers: bool) -> StructType:
    # Spark's types only here: the scan of `upgrade plan` reads Arrow batches without Spark.
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> Any:
    """What Spark expects of a RecordBatch for :func:`spark_schema` (checked on 4.3)."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        # Kafka timestamps are milliseconds; Spark's are microseconds in UTC.
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(pa.field("element", header))))
    return pa.schema(fields)
