"""The testing API a project's tests use, beside the pytest plugin's fixtures.

The plugin (``plugin``, loaded by the ``pytest11`` entry point) gives ``kafka_backend``,
``spark`` and ``project``; the names below give the rest: real Kafka topics, static frames
for the query's steps, the parser mirror's check, what ``upgrade plan`` and ``run`` see of an
edit, the commands the docs show, the upgrade proved on the project's own events, and a
search for a leaked secret; and for a project's CI, what the brokers need (the container
image, the apache backend's Maven coordinates, whether a container engine answers, the test
PostgreSQL's variable).

Each name is imported when it is first used, not with this package: loading the plugin (or
``import pyspark_kafka_upgrade.testing``) needs neither pyspark, py4j nor a Kafka client, so
installing the library never breaks pytest where they are absent. The modules beside this
one whose names start with ``_`` are internal; import from here.
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
    from pyspark_kafka_upgrade.testing._connector import connector_under_test
    from pyspark_kafka_upgrade.testing._docs import (
        DocumentedCommand,
        documented_commands,
        refusal,
    )
    from pyspark_kafka_upgrade.testing._driver_process import (
        run_in_own_group,
        sigterm_after_second_batch,
    )
    from pyspark_kafka_upgrade.testing._frames import kafka_rows, project_recipe
    from pyspark_kafka_upgrade.testing._kafka.apache_runtime import kafka_coordinates
    from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackend
    from pyspark_kafka_upgrade.testing._kafka.engine import docker_is_available
    from pyspark_kafka_upgrade.testing._kafka.image import DEFAULT_KAFKA_IMAGE
    from pyspark_kafka_upgrade.testing._kafka.topics import (
        Record,
        create_topic,
        produce,
        unique_topic,
    )
    from pyspark_kafka_upgrade.testing._ledgers import POSTGRES_DSN_ENV
    from pyspark_kafka_upgrade.testing._mirror import mirror_disagreements
    from pyspark_kafka_upgrade.testing._proof import ProofReport, prove_upgrade
    from pyspark_kafka_upgrade.testing._secret_search import assert_no_secret
    from pyspark_kafka_upgrade.testing._signatures import (
        advice,
        query_source,
        run_refusal,
        with_query_source,
    )
    from pyspark_kafka_upgrade.testing._spark_cluster import (
        SparkCluster,
        processes_of,
        standalone_cluster,
    )
    from pyspark_kafka_upgrade.testing._waiting import wait_until

_KAFKA = "pyspark_kafka_upgrade.testing._kafka"
# Each public name and the module it lives in, imported on first use (PEP 562).
_WHERE = {
    "read_checkpoint": "pyspark_kafka_upgrade._adapters.checkpoint.reader",
    "SPARK_KAFKA_JARS": "pyspark_kafka_upgrade._adapters.spark.kafka_jars",
    "fetch_connector_jars": "pyspark_kafka_upgrade._adapters.spark.kafka_jars",
    "output_schema": "pyspark_kafka_upgrade._core.query.aggregate_types",
    "connector_under_test": "pyspark_kafka_upgrade.testing._connector",
    "DocumentedCommand": "pyspark_kafka_upgrade.testing._docs",
    "documented_commands": "pyspark_kafka_upgrade.testing._docs",
    "refusal": "pyspark_kafka_upgrade.testing._docs",
    "run_in_own_group": "pyspark_kafka_upgrade.testing._driver_process",
    "sigterm_after_second_batch": "pyspark_kafka_upgrade.testing._driver_process",
    "kafka_rows": "pyspark_kafka_upgrade.testing._frames",
    "project_recipe": "pyspark_kafka_upgrade.testing._frames",
    "kafka_coordinates": f"{_KAFKA}.apache_runtime",
    "KafkaBackend": f"{_KAFKA}.backend",
    "docker_is_available": f"{_KAFKA}.engine",
    "DEFAULT_KAFKA_IMAGE": f"{_KAFKA}.image",
    "Record": f"{_KAFKA}.topics",
    "create_topic": f"{_KAFKA}.topics",
    "produce": f"{_KAFKA}.topics",
    "unique_topic": f"{_KAFKA}.topics",
    "POSTGRES_DSN_ENV": "pyspark_kafka_upgrade.testing._ledgers",
    "mirror_disagreements": "pyspark_kafka_upgrade.testing._mirror",
    "ProofReport": "pyspark_kafka_upgrade.testing._proof",
    "prove_upgrade": "pyspark_kafka_upgrade.testing._proof",
    "assert_no_secret": "pyspark_kafka_upgrade.testing._secret_search",
    "advice": "pyspark_kafka_upgrade.testing._signatures",
    "query_source": "pyspark_kafka_upgrade.testing._signatures",
    "run_refusal": "pyspark_kafka_upgrade.testing._signatures",
    "with_query_source": "pyspark_kafka_upgrade.testing._signatures",
    "SparkCluster": "pyspark_kafka_upgrade.testing._spark_cluster",
    "processes_of": "pyspark_kafka_upgrade.testing._spark_cluster",
    "standalone_cluster": "pyspark_kafka_upgrade.testing._spark_cluster",
    "wait_until": "pyspark_kafka_upgrade.testing._waiting",
}

__all__ = [
    "DEFAULT_KAFKA_IMAGE",
    "POSTGRES_DSN_ENV",
    "SPARK_KAFKA_JARS",
    "DocumentedCommand",
    "KafkaBackend",
    "ProofReport",
    "Record",
    "SparkCluster",
    "advice",
    "assert_no_secret",
    "connector_under_test",
    "create_topic",
    "docker_is_available",
    "documented_commands",
    "fetch_connector_jars",
    "kafka_coordinates",
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
