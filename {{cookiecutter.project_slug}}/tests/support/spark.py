"""A small local SparkSession for tests: one core, no UI, loopback only."""

from __future__ import annotations

from pyspark.sql import SparkSession


def build_test_spark_session(app_name: str) -> SparkSession:
    """Start (or reuse) a local[1] session that needs no network beyond 127.0.0.1."""
    return (
        SparkSession.builder.master("local[1]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
