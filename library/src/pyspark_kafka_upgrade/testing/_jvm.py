"""The JVM options of every JVM a test starts: Spark's drivers, daemons and executors, and
the Apache Kafka broker.

A test's JVM lives seconds to minutes on little data, where the optimising JIT compiler
(C2) costs more CPU than it ever saves: with C1 only, an integration test of the upgrade
here spent a third less CPU and its wall time fell by 12 %, more where tests share two
cores. Nothing a test checks depends on the compiler. The collector stays the JVM's own:
with the serial one, `output show --limit 1000000` ran out of a 1 GiB heap that G1 serves.
A value already in the environment, even an empty one, is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",)

# The test brokers' (Apache Kafka's process and its container), read as Kafka's own scripts
# read it. Unset, a broker runs with Kafka's defaults, as it does for the benchmarks.
KAFKA_JVM_VARIABLE = "KAFKA_JVM_PERFORMANCE_OPTS"
# spark-submit's driver (pyspark's gateway included), the standalone master and worker, and
# the test brokers.
_VARIABLES = ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS", KAFKA_JVM_VARIABLE)


def use_test_jvm_options(env: MutableMapping[str, str]) -> None:
    """Give the JVMs that ``env`` starts the test options, where it sets none of its own."""
    for name in _VARIABLES:
        env.setdefault(name, " ".join(TEST_JVM_OPTIONS))


def executor_java_options(env: Mapping[str, str]) -> str:
    """``spark.executor.extraJavaOptions`` for a cluster's executors: the drivers' options."""
    return env.get("SPARK_SUBMIT_OPTS", " ".join(TEST_JVM_OPTIONS))
