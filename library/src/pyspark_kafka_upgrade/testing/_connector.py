"""The connector every pipeline test runs with: ``KAFKA_CONNECTOR`` (``python`` or
``builtin``), else the project's own setting, so that CI can run the same suite on both.

It imports no pyspark: the report header names the connector in every session.
"""

from __future__ import annotations

import os

from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.values import catalog
from pyspark_kafka_upgrade._domain.values.project import Project

CONNECTOR_ENV_VAR = "KAFKA_CONNECTOR"
CONNECTORS = catalog.CONNECTORS


def connector_under_test(project: Project) -> str:
    """The connector the pipeline tests run with: ``KAFKA_CONNECTOR``, else the project's."""
    chosen = os.environ.get(CONNECTOR_ENV_VAR, "").strip().lower()
    if not chosen:
        return load_settings(project, env={}).settings.kafka.connector
    if chosen not in CONNECTORS:
        raise ValueError(
            f"{CONNECTOR_ENV_VAR}={chosen!r} is not a connector; allowed: {', '.join(CONNECTORS)}"
        )
    return chosen


def sink_under_test(project: Project) -> str:
    """The sink the pipeline tests write to: the project's setting (its session needs Delta's
    jars for ``delta``)."""
    return load_settings(project, env={}).settings.sink.format
