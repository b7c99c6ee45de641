"""The library's own test session: the plugin (``pyspark_kafka_upgrade.testing.plugin``,
loaded by its entry point) gives Kafka, Spark and the reference project; this adds the kill
trials' table.

``tests/`` is on ``sys.path`` (pytest ``pythonpath``), so helpers import as ``support.*``.
"""

from __future__ import annotations

import pytest

import support.soak_table

# pytester runs inner test sessions, for the tests of the plugin's hooks themselves.
pytest_plugins = ("pytester",)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The kill trials' table, when any ran: where each kill landed and the verdict."""
    if support.soak_table.ROWS:
        terminalreporter.section("kill -9 trials")
        for line in support.soak_table.render(support.soak_table.ROWS):
            terminalreporter.write_line(line)
