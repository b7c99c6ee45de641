"""The SQL conditions the sink and verify build a backfill's windows from agree, in Spark,
with the commit's own rule (``BackfillCommit.covers``), on every window near its ranges."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType, TimestampType

from pyspark_kafka_upgrade._core.query.window_sql import on_grid, owned_by
from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit, EndRange
from pyspark_kafka_upgrade._domain.records.signature import Aggregate
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z
MINUTE_MS = 60_000
SLIDING = WindowSpec(duration_ms=10 * MINUTE_MS, slide_ms=5 * MINUTE_MS, watermark_delay_ms=0)
# Two ranges with a gap, the second one slide long; in microseconds past an int's range.
RANGES = (
    EndRange(BASE_MS, BASE_MS + 45 * MINUTE_MS),
    EndRange(BASE_MS + 60 * MINUTE_MS, BASE_MS + 65 * MINUTE_MS),
)


def commit(ranges: tuple[EndRange, ...]) -> BackfillCommit:
    return BackfillCommit(
        backfill=1,
        pipeline="page_views",
        generation=2,
        window=SLIDING,
        grouping_keys=("article_id",),
        aggregates=(Aggregate("views", "count(*)"),),
        ranges=ranges,
        files=(),
        windows=0,
        rows=0,
        created_at_ms=BASE_MS,
    )


# Every start a minute apart around the ranges, with windows of the grid's length and of
# others (a tumbling 10 minutes' starts off the 5-minute slide, a 5-minute window).
WINDOWS = [
    (start, start + length)
    for start in range(BASE_MS - 30 * MINUTE_MS, BASE_MS + 80 * MINUTE_MS, MINUTE_MS)
    for length in (5 * MINUTE_MS, 10 * MINUTE_MS, 15 * MINUTE_MS)
]


def test_a_backfills_windows_are_the_same_over_timestamps_and_over_microseconds(
    spark: SparkSession,
) -> None:
    owner = commit(RANGES)
    frame = spark.createDataFrame(
        [(start * 1000, end * 1000) for start, end in WINDOWS],
        StructType([StructField("s", LongType(), False), StructField("e", LongType(), False)]),
    ).select(
        "s",
        "e",
        F.timestamp_micros("s").alias("window_start"),
        F.timestamp_micros("e").alias("window_end"),
    )
    assert isinstance(frame.schema["window_start"].dataType, TimestampType)
    rows = frame.select(
        "s",
        "e",
        F.expr(owned_by(owner, "s", "e")).alias("longs"),
        F.expr(owned_by(owner, "unix_micros(window_start)", "unix_micros(window_end)")).alias(
            "timestamps"
        ),
        F.expr(on_grid(SLIDING, "s", "e")).alias("grid"),
    ).collect()

    expected = {(s, e): owner.covers(s, e) for s, e in WINDOWS}
    assert any(expected.values()) and not all(expected.values())
    assert {(row.s // 1000, row.e // 1000): row.longs for row in rows} == expected
    assert {(row.s // 1000, row.e // 1000): row.timestamps for row in rows} == expected
    on_the_grid = {
        (s, e): e - s == SLIDING.duration_ms and s % SLIDING.slide_ms == 0 for s, e in WINDOWS
    }
    assert {(row.s // 1000, row.e // 1000): row.grid for row in rows} == on_the_grid


def test_a_commit_without_ranges_owns_no_window(spark: SparkSession) -> None:
    frame = spark.createDataFrame(
        [(BASE_MS * 1000, (BASE_MS + 10 * MINUTE_MS) * 1000)], "s long, e long"
    )
    [row] = frame.select(F.expr(owned_by(commit(()), "s", "e")).alias("owned")).collect()
    assert row.owned is False
