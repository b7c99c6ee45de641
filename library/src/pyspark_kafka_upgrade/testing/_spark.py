"""A small local SparkSession for tests: one core, no UI, loopback only.

It starts with the connector under test (``_connector``); with ``builtin``, with the
connector's jars, resolved with Maven on first use.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._adapters.spark import maven
from pyspark_kafka_upgrade._adapters.spark.delta_jars import (
    DELTA_SESSION_CONF,
    LOCAL_DELTA_CONF,
    fetch_delta_jars,
)
from pyspark_kafka_upgrade._adapters.spark.kafka_jars import (
    SPARK_KAFKA_JARS,
    connector_package,
    fetch_connector_jars,
)


def build_test_spark_session(
    app_name: str, connector: str, event_log_dir: Path | None = None, *, delta: bool = False
) -> SparkSession:
    """Start (or reuse) a local[1] session that needs no network beyond 127.0.0.1.

    Python workers (executors and the planners of Python data sources) run this interpreter
    with this process's import path: they need pyarrow and the package under test, and when
    they cannot start, Spark only reports "Python worker failed to connect back".
    """
    # The JVM starts the workers and passes its environment on; it must be set before the
    # JVM starts. The data source planner reads the variable, not spark.pyspark.python.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
    builder = (
        SparkSession.builder.master("local[1]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", sys.executable)
    )
    if event_log_dir is not None:
        # What Spark's history server would show, for tests that look through it.
        # Uncompressed (Spark 4 writes zstd by default), so that tests can search it.
        builder = (
            builder.config("spark.eventLog.enabled", "true")
            .config("spark.eventLog.dir", event_log_dir.as_uri())
            .config("spark.eventLog.compress", "false")
        )
    # Jars load only with a process's first SparkContext: the one session of the run must
    # have them for any test to read with the built-in connector or write a Delta table.
    jars = fetch_connector_jars() if connector == "builtin" else []
    if delta:
        jars += fetch_delta_jars()
        for key, value in {**DELTA_SESSION_CONF, **LOCAL_DELTA_CONF}.items():
            builder = builder.config(key, value)
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    return builder.getOrCreate()


def skip_unless_builtin_jars_can_be_had() -> None:
    """Skip, saying why, where neither mvn nor SPARK_KAFKA_JARS can give the connector's jars.

    CI has Maven, and the template's own checks fail a CI run in which this skipped.
    """
    cached = maven.cached_jars([connector_package(pyspark.__version__)])
    listed = os.environ.get(SPARK_KAFKA_JARS, "").strip()
    if maven.mvn_executable() is None and not cached and not listed:
        pytest.skip(
            "neither mvn nor SPARK_KAFKA_JARS is available, so the built-in connector's jars "
            "cannot be had here; install Maven, or set SPARK_KAFKA_JARS (README, Connectors)"
        )
