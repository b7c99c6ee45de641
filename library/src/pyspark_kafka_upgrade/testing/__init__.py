"""The testing API a project's tests use, beside the pytest plugin's fixtures.

The plugin (``plugin``, loaded by the ``pytest11`` entry point) gives ``kafka_backend``,
``spark`` and ``project``; the names below give the rest: real Kafka topics, static frames
for the query's steps, the parser mirror's check, what ``upgrade plan`` and ``run`` see of an
edit, the commands the docs show, and the upgrade proved on the project's own events.

Each name is imported when it is first used, not with this package: loading the plugin (or
``import pyspark_kafka_upgrade.testing``) needs neither pyspark, py4j nor a Kafka client, so
installing the library never breaks pytest where they are absent. The modules beside this
one are internal; import from here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._adapters.checkpoint.reader import read_checkpoint
    from pyspark_kafka_upgrade._adapters.spark.kafka_jars import (
        SPARK_KAFKA_JARS,
        fetch_connector_jars,
    )
    from pyspark_kafka_upgrade._core.query.aggregate_types import output_schema
    from pyspark_kafka_upgrade.testing.docs import (
        DocumentedCommand,
        documented_commands,
        refusal,
    )
    from pyspark_kafka_upgrade.testing.driver_process import (
        run_in_own_group,
        sigterm_after_second_batch,
    )
    from pyspark_kafka_upgrade.testing.frames import kafka_rows, project_recipe
    from pyspark_kafka_upgrade.testing.kafka_backends import (
        KafkaBackend,
        Record,
        create_topic,
        produce,
        unique_topic,
    )
    from pyspark_kafka_upgrade.testing.mirror import mirror_disagreements
    from pyspark_kafka_upgrade.testing.proof import ProofReport, prove_upgrade
    from pyspark_kafka_upgrade.testing.signatures import (
        advice,
        query_source,
        run_refusal,
        with_query_source,
    )
    from pyspark_kafka_upgrade.testing.spark import connector_under_test
    from pyspark_kafka_upgrade.testing.spark_cluster import (
        SparkCluster,
        processes_of,
        standalone_cluster,
    )
    from pyspark_kafka_upgrade.testing.waiting import wait_until

# Each public name and the module it lives in, imported on first use (PEP 562).
_WHERE = {
    "read_checkpoint": "pyspark_kafka_upgrade._adapters.checkpoint.reader",
    "SPARK_KAFKA_JARS": "pyspark_kafka_upgrade._adapters.spark.kafka_jars",
    "fetch_connector_jars": "pyspark_kafka_upgrade._adapters.spark.kafka_jars",
    "output_schema": "pyspark_kafka_upgrade._core.query.aggregate_types",
    "DocumentedCommand": "pyspark_kafka_upgrade.testing.docs",
    "documented_commands": "pyspark_kafka_upgrade.testing.docs",
    "refusal": "pyspark_kafka_upgrade.testing.docs",
    "run_in_own_group": "pyspark_kafka_upgrade.testing.driver_process",
    "sigterm_after_second_batch": "pyspark_kafka_upgrade.testing.driver_process",
    "kafka_rows": "pyspark_kafka_upgrade.testing.frames",
    "project_recipe": "pyspark_kafka_upgrade.testing.frames",
    "KafkaBackend": "pyspark_kafka_upgrade.testing.kafka_backends",
    "Record": "pyspark_kafka_upgrade.testing.kafka_backends",
    "create_topic": "pyspark_kafka_upgrade.testing.kafka_backends",
    "produce": "pyspark_kafka_upgrade.testing.kafka_backends",
    "unique_topic": "pyspark_kafka_upgrade.testing.kafka_backends",
    "mirror_disagreements": "pyspark_kafka_upgrade.testing.mirror",
    "ProofReport": "pyspark_kafka_upgrade.testing.proof",
    "prove_upgrade": "pyspark_kafka_upgrade.testing.proof",
    "advice": "pyspark_kafka_upgrade.testing.signatures",
    "query_source": "pyspark_kafka_upgrade.testing.signatures",
    "run_refusal": "pyspark_kafka_upgrade.testing.signatures",
    "with_query_source": "pyspark_kafka_upgrade.testing.signatures",
    "connector_under_test": "pyspark_kafka_upgrade.testing.spark",
    "SparkCluster": "pyspark_kafka_upgrade.testing.spark_cluster",
    "processes_of": "pyspark_kafka_upgrade.testing.spark_cluster",
    "standalone_cluster": "pyspark_kafka_upgrade.testing.spark_cluster",
    "wait_until": "pyspark_kafka_upgrade.testing.waiting",
}

__all__ = [
    "SPARK_KAFKA_JARS",
    "DocumentedCommand",
    "KafkaBackend",
    "ProofReport",
    "Record",
    "SparkCluster",
    "advice",
    "connector_under_test",
    "create_topic",
    "documented_commands",
    "fetch_connector_jars",
    "kafka_rows",
    "mirror_disagreements",
    "output_schema",
    "processes_of",
    "produce",
    "project_recipe",
    "prove_upgrade",
    "query_source",
    "read_checkpoint",
    "refusal",
    "run_in_own_group",
    "run_refusal",
    "sigterm_after_second_batch",
    "standalone_cluster",
    "unique_topic",
    "wait_until",
    "with_query_source",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
