"""Every JVM a test starts runs with C1 only, and Spark's map the class archive, unless the
environment says otherwise: the session's own JVM here, its subprocesses through the
environment the plugin sets."""

from __future__ import annotations

import json
import os

from pyspark.sql import SparkSession

from pyspark_kafka_upgrade.testing._jvm import (
    SET_BY_PLUGIN,
    TEST_JVM_OPTIONS,
    executor_java_options,
    spark_options_are_ours,
    use_test_jvm_options,
)

ARCHIVE = ("-XX:SharedArchiveFile=/cache/a.jsa",)


def test_an_environment_without_options_gets_the_test_options() -> None:
    env: dict[str, str] = {"PATH": "/bin"}
    assert spark_options_are_ours(env)
    use_test_jvm_options(env, ARCHIVE)
    assert env == {
        "PATH": "/bin",
        "SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/cache/a.jsa",
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/cache/a.jsa",
        # Spark's archive is no use to Kafka's broker, whose classes are others.
        "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:TieredStopAtLevel=1",
        SET_BY_PLUGIN: json.dumps(
            {
                "SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/cache/a.jsa",
                "SPARK_DAEMON_JAVA_OPTS": (
                    "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/cache/a.jsa"
                ),
                "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:TieredStopAtLevel=1",
            }
        ),
    }
    assert executor_java_options(env) == env["SPARK_SUBMIT_OPTS"]
    assert spark_options_are_ours(env)


def test_options_the_environment_sets_even_empty_are_kept() -> None:
    env = {
        "SPARK_SUBMIT_OPTS": "",
        "SPARK_DAEMON_JAVA_OPTS": "-Xmx2g",
        "KAFKA_JVM_PERFORMANCE_OPTS": "-server",
    }
    kept = dict(env)
    assert not spark_options_are_ours(env)
    use_test_jvm_options(env, ARCHIVE)
    assert env == {**kept, SET_BY_PLUGIN: "{}"}
    # Executors run what the drivers run.
    assert executor_java_options(env) == ""


def test_a_child_session_sets_again_what_its_parents_plugin_set_and_nothing_else() -> None:
    # A test running another project's pytest, on another Spark: that Spark's archive.
    env = {"SPARK_DAEMON_JAVA_OPTS": "-Xmx2g"}
    use_test_jvm_options(env, ARCHIVE)
    child = dict(env)
    assert spark_options_are_ours(child)
    use_test_jvm_options(child, ("-XX:SharedArchiveFile=/cache/other.jsa",))
    assert (
        child["SPARK_SUBMIT_OPTS"]
        == "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/cache/other.jsa"
    )
    assert child["SPARK_DAEMON_JAVA_OPTS"] == "-Xmx2g"
    assert set(json.loads(child[SET_BY_PLUGIN])) == {
        "SPARK_SUBMIT_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
    }


def test_a_value_set_over_the_parents_is_the_environments_own_and_kept() -> None:
    # A test that runs a child pytest with its own SPARK_SUBMIT_OPTS, the parent's record
    # passed on with the rest of its environment.
    env: dict[str, str] = {}
    use_test_jvm_options(env, ARCHIVE)
    child = {**env, "SPARK_SUBMIT_OPTS": "-Xmx4g"}
    assert not spark_options_are_ours(child)
    use_test_jvm_options(child, ("-XX:SharedArchiveFile=/cache/other.jsa",))
    assert child["SPARK_SUBMIT_OPTS"] == "-Xmx4g"
    assert child["SPARK_DAEMON_JAVA_OPTS"].endswith("/cache/other.jsa")


def test_the_plugin_set_them_before_the_sessions_jvm_started(spark: SparkSession) -> None:
    if not spark_options_are_ours(os.environ):
        raise AssertionError(
            "this run sets SPARK_SUBMIT_OPTS itself; the plugin keeps it, and this test "
            "checks the plugin's default: unset it to run this test"
        )
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    arguments = list(
        jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    )
    assert set(os.environ["SPARK_SUBMIT_OPTS"].split()) <= set(arguments), arguments
    assert set(TEST_JVM_OPTIONS) <= set(arguments), arguments
