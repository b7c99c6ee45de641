"""A small local SparkSession for tests: one core, no UI, loopback only."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def build_test_spark_session(app_name: str) -> SparkSession:
    """Start (or reuse) a local[1] session that needs no network beyond 127.0.0.1.

    Python workers (executors and the planners of Python data sources) run this interpreter
    with this process's import path: they need pyarrow and the package under test, and when
    they cannot start, Spark only reports "Python worker failed to connect back".
    """
    # The JVM starts the workers and passes its environment on; it must be set before the
    # JVM starts. The data source planner reads the variable, not spark.pyspark.python.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
    return (
        SparkSession.builder.master("local[1]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
