"""Every JVM a test starts runs with C1 only, unless the
environment says otherwise: the session's own JVM here, its subprocesses through the
environment the plugin sets."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

from pyspark_kafka_upgrade.testing._jvm import (
    TEST_JVM_OPTIONS,
    executor_java_options,
    use_test_jvm_options,
)


def test_an_environment_without_options_gets_the_test_options() -> None:
    env: dict[str, str] = {"PATH": "/bin"}
    use_test_jvm_options(env)
    assert env == {
        "PATH": "/bin",
        "SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1",
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1",
        "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:TieredStopAtLevel=1",
    }
    assert executor_java_options(env) == "-XX:TieredStopAtLevel=1"


def test_options_the_environment_sets_even_empty_are_kept() -> None:
    env = {
        "SPARK_SUBMIT_OPTS": "",
        "SPARK_DAEMON_JAVA_OPTS": "-Xmx2g",
        "KAFKA_JVM_PERFORMANCE_OPTS": "-server",
    }
    kept = dict(env)
    use_test_jvm_options(env)
    assert env == kept
    # Executors run what the drivers run.
    assert executor_java_options(env) == ""


def test_the_plugin_set_them_before_the_sessions_jvm_started(spark: SparkSession) -> None:
    if os.environ["SPARK_SUBMIT_OPTS"] != " ".join(TEST_JVM_OPTIONS):
        raise AssertionError(
            "this run sets SPARK_SUBMIT_OPTS itself; the plugin keeps it, and this test "
            "checks the plugin's default: unset it to run this test"
        )
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    arguments = list(
        jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    )
    assert set(TEST_JVM_OPTIONS) <= set(arguments), arguments
