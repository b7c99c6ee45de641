"""The JVM options of every JVM a test starts: Spark's drivers, daemons and executors, and
the Apache Kafka broker.

A test's JVM lives seconds to minutes on little data, where the optimising JIT compiler
(C2) costs more CPU than it ever saves: with C1 only, an integration test of the upgrade
here spent a third less CPU and its wall time fell by 12 %, more where tests share two
cores. Nothing a test checks depends on the compiler. The collector stays the JVM's own:
with the serial one, `output show --limit 1000000` ran out of a 1 GiB heap that G1 serves.
Spark's JVMs also map the class archive (``_class_archive``) where there is one.

A value already in the environment, even an empty one, is kept, unless this plugin set it
in a parent process (a test that runs another project's pytest, on another Spark): the
child sets its own, for its own Spark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping, Sequence

TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",)

# The test brokers' (Apache Kafka's process and its container), read as Kafka's own scripts
# read it. Unset, a broker runs with Kafka's defaults, as it does for the benchmarks.
KAFKA_JVM_VARIABLE = "KAFKA_JVM_PERFORMANCE_OPTS"
# spark-submit's driver (pyspark's gateway included), the standalone master and worker.
_SPARK_VARIABLES = ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS")
# What this plugin set, as JSON {variable: value}, for its children to recognise: a value
# that is still the one it set is the plugin's, any other the environment's own.
SET_BY_PLUGIN = "PYSPARK_KAFKA_UPGRADE_TEST_JVM"


def use_test_jvm_options(env: MutableMapping[str, str], spark_options: Sequence[str] = ()) -> None:
    """Give the JVMs that ``env`` starts the test options, where it sets none of its own;
    Spark's get ``spark_options`` too."""
    ours = _set_by_plugin(env)
    wanted = {
        **dict.fromkeys(_SPARK_VARIABLES, " ".join((*TEST_JVM_OPTIONS, *spark_options))),
        KAFKA_JVM_VARIABLE: " ".join(TEST_JVM_OPTIONS),
    }
    chosen = [name for name in wanted if name not in env or name in ours]
    for name in chosen:
        env[name] = wanted[name]
    env[SET_BY_PLUGIN] = json.dumps({name: env[name] for name in chosen})


def spark_options_are_ours(env: Mapping[str, str]) -> bool:
    """Whether this plugin sets the Spark drivers' options (no value of the environment's)."""
    return "SPARK_SUBMIT_OPTS" not in env or "SPARK_SUBMIT_OPTS" in _set_by_plugin(env)


def _set_by_plugin(env: Mapping[str, str]) -> set[str]:
    """The variables whose value is still the one this plugin (here or in a parent) set."""
    try:
        recorded = json.loads(env.get(SET_BY_PLUGIN, "") or "{}")
    except ValueError:
        return set()
    if not isinstance(recorded, dict):
        return set()
    return {name for name, value in recorded.items() if env.get(name) == value}


def executor_java_options(env: Mapping[str, str]) -> str:
    """``spark.executor.extraJavaOptions`` for a cluster's executors: the drivers' options."""
    return env.get("SPARK_SUBMIT_OPTS", " ".join(TEST_JVM_OPTIONS))
