"""The library's own test session: the plugin (``pyspark_kafka_upgrade.testing.plugin``,
loaded by its entry point) gives Kafka, Spark and the reference project; this adds the kill
trials' table.

``tests/`` is on ``sys.path`` (pytest ``pythonpath``), so helpers import as ``support.*``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import support.soak_table
from pyspark_kafka_upgrade.testing._connector import connector_under_test
from pyspark_kafka_upgrade.testing.plugin import project_under_test

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# pytester runs inner test sessions, for the tests of the plugin's hooks themselves.
pytest_plugins = ("pytester",)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The kill trials' table, when any ran: where each kill landed and the verdict."""
    if support.soak_table.ROWS:
        terminalreporter.section("kill -9 trials")
        for line in support.soak_table.render(support.soak_table.ROWS):
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def spark(pytestconfig: pytest.Config, spark_event_log: Path) -> Iterator[SparkSession]:
    """The plugin's one session, always with Delta's jars: the library's suite tests every
    sink, whichever the reference project writes to."""
    from pyspark_kafka_upgrade.testing._spark import build_test_spark_session

    project = project_under_test(pytestconfig)
    session = build_test_spark_session(
        "tests", connector_under_test(project), event_log_dir=spark_event_log, delta=True
    )
    yield session
    session.stop()
