"""Test-wide fixtures and hooks: the Kafka test backend, Spark and the ``integration`` marker.

``tests/`` is on ``sys.path`` (pytest ``pythonpath``), so helpers import as ``support.*``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

import support.spark
from support.kafka_backends import (
    BACKEND_CHOICES,
    BACKEND_ENV_VAR,
    KafkaBackend,
    KafkaBackendError,
    describe_backend_choice,
    resolve_backend_choice,
    start_kafka_backend,
)

# The choice is resolved once per session (it may probe Docker for up to a few seconds) and
# shared by the report header and the fixture, so the header names the broker actually used.
_BACKEND_CHOICE = pytest.StashKey[str | KafkaBackendError]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"integration: needs a Kafka broker; {BACKEND_ENV_VAR}="
        f"{'|'.join(BACKEND_CHOICES)} picks which (default auto)",
    )


def _backend_choice(config: pytest.Config) -> str | KafkaBackendError:
    if _BACKEND_CHOICE not in config.stash:
        try:
            choice: str | KafkaBackendError = resolve_backend_choice(os.environ)
        except KafkaBackendError as exc:
            # Reported in the header and raised by the fixture, so that tests which need no
            # broker still run when KAFKA_BACKEND is wrong.
            choice = exc
        config.stash[_BACKEND_CHOICE] = choice
    return config.stash[_BACKEND_CHOICE]


def pytest_report_header(config: pytest.Config) -> str:
    choice = _backend_choice(config)
    if isinstance(choice, KafkaBackendError):
        return f"kafka backend: INVALID ({choice})"
    description = describe_backend_choice(choice, os.environ)
    return f"kafka backend: {choice} ({description})"


@pytest.fixture(scope="session")
def kafka_backend(pytestconfig: pytest.Config) -> Iterator[KafkaBackend]:
    """A running Kafka broker, started only if some test in the session asks for it."""
    choice = _backend_choice(pytestconfig)
    if isinstance(choice, KafkaBackendError):
        # The message says everything; a traceback into the env parsing would only add noise.
        pytest.fail(str(choice), pytrace=False)
    with start_kafka_backend(choice) as backend:
        yield backend


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One SparkSession for the whole run, started only if some test asks for it."""
    session = support.spark.build_test_spark_session("tests")
    yield session
    session.stop()
