"""``connector fetch``: resolve the built-in Kafka connector's jars once, and say where they are.

The same jars a ``builtin`` run loads; printed so that ``spark-submit --jars`` or
``SPARK_KAFKA_JARS`` on a machine without Maven can use them too.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pyspark

from pyspark_kafka_upgrade._adapters.spark.kafka_jars import (
    SPARK_KAFKA_JARS,
    connector_package,
    fetch_connector_jars,
)
from pyspark_kafka_upgrade._domain.values.json_record import JsonRecord


@dataclasses.dataclass(frozen=True)
class ConnectorJars(JsonRecord):
    """Where the built-in connector's jars are, for the running pyspark."""

    spark_version: str
    package: str
    jars: tuple[str, ...]
    seconds: float


def fetch(spark_version: str | None = None) -> ConnectorJars:
    version = spark_version or pyspark.__version__
    started = time.monotonic()
    jars = fetch_connector_jars(version)
    return ConnectorJars(
        spark_version=version,
        package=connector_package(version),
        jars=tuple(jars),
        seconds=round(time.monotonic() - started, 3),
    )


def render(report: ConnectorJars) -> str:
    lines = [
        f"{report.package}: {len(report.jars)} jars beyond pyspark {report.spark_version}'s own",
        *(f"  {jar}" for jar in report.jars),
        "",
        "to load them elsewhere (spark-submit --jars, or a machine without Maven):",
        f"  export {SPARK_KAFKA_JARS}={','.join(report.jars)}",
    ]
    return "\n".join(lines)


def fetch_command(*, as_json: bool) -> str:
    report = fetch()
    return json.dumps(report.to_json(), indent=2) if as_json else render(report)
