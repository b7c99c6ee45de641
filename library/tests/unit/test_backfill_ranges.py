"""The windows a backfill chose, as the ranges of ends its commit names (found in Spark)."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StructField, StructType

from pyspark_kafka_upgrade._adapters.spark.backfill_values import _ranges
from pyspark_kafka_upgrade._adapters.spark.window_pairs import END, US
from pyspark_kafka_upgrade._domain.records.backfill import EndRange

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z
MINUTE_MS = 60_000


def test_the_ends_one_slide_apart_make_one_range_however_many_they_are(
    spark: SparkSession,
) -> None:
    # Nine 5-minute slides in a row, then two more after a gap. In microseconds, the ninth
    # slide's offset (9 x 300,000,000) no longer fits in an int: the islands are found in
    # longs, or the job fails with an arithmetic overflow.
    slide_ms = 5 * MINUTE_MS
    ends = [*range(1, 10), 12, 13]
    chosen = spark.createDataFrame(
        [((BASE_MS + n * slide_ms) * US,) for n in ends],
        StructType([StructField(END, LongType(), False)]),
    )

    assert _ranges(chosen, slide_ms * US) == (
        EndRange(BASE_MS, BASE_MS + 9 * slide_ms),
        EndRange(BASE_MS + 11 * slide_ms, BASE_MS + 13 * slide_ms),
    )
