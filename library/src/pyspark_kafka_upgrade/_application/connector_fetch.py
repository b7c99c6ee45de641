"""``connector fetch``: resolve the built-in Kafka connector's jars once, and say where they are;
Delta Lake's too when the sink is a Delta table.

The same jars a ``builtin`` run (or a ``delta`` sink) loads; printed so that ``spark-submit
--jars``, ``SPARK_KAFKA_JARS`` or ``SPARK_DELTA_JARS`` on a machine without Maven can use them.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pyspark

from pyspark_kafka_upgrade._adapters.spark.delta_jars import (
    SPARK_DELTA_JARS,
    delta_package,
    fetch_delta_jars,
)
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
    # With sink.format = "delta" (added in 0.8.0): Delta Lake's build for this Spark and its
    # jars beyond pyspark's; empty otherwise.
    delta_package: str = ""
    delta_jars: tuple[str, ...] = ()


def fetch(spark_version: str | None = None, *, delta: bool = False) -> ConnectorJars:
    version = spark_version or pyspark.__version__
    started = time.monotonic()
    jars = fetch_connector_jars(version)
    extra = fetch_delta_jars(version) if delta else []
    return ConnectorJars(
        spark_version=version,
        package=connector_package(version),
        jars=tuple(jars),
        seconds=round(time.monotonic() - started, 3),
        delta_package=delta_package(version) if delta else "",
        delta_jars=tuple(extra),
    )


def render(report: ConnectorJars) -> str:
    lines = [
        f"{report.package}: {len(report.jars)} jars beyond pyspark {report.spark_version}'s own",
        *(f"  {jar}" for jar in report.jars),
        "",
        "to load them elsewhere (spark-submit --jars, or a machine without Maven):",
        f"  export {SPARK_KAFKA_JARS}={','.join(report.jars)}",
    ]
    if report.delta_package:
        lines += [
            "",
            f"{report.delta_package}: {len(report.delta_jars)} jars beyond pyspark's own "
            '(sink.format = "delta")',
            *(f"  {jar}" for jar in report.delta_jars),
            "",
            "to load them elsewhere (spark-submit --jars, or a machine without Maven):",
            f"  export {SPARK_DELTA_JARS}={','.join(report.delta_jars)}",
        ]
    return "\n".join(lines)


def fetch_command(*, as_json: bool, delta: bool = False) -> str:
    report = fetch(delta=delta)
    return json.dumps(report.to_json(), indent=2) if as_json else render(report)
