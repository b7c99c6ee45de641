"""Test-wide fixtures and hooks: the Kafka test backend, Spark and the ``integration`` marker.

``tests/`` is on ``sys.path`` (pytest ``pythonpath``), so helpers import as ``support.*``.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

import support.soak_table
import support.spark
from support.kafka_backends import (
    BACKEND_CHOICES,
    BACKEND_ENV_VAR,
    BackendChoice,
    KafkaBackend,
    KafkaBackendError,
    describe_backend_choice,
    resolve_backend_choice,
    start_kafka_backend,
)

# pytester runs inner test sessions, for the tests of these hooks themselves.
pytest_plugins = ("pytester",)

# The choice is resolved once per session (it may probe Docker, Java and Maven, each with a
# deadline) and shared by the report header and the fixture, so the header names the broker
# actually used.
_BACKEND_CHOICE = pytest.StashKey[BackendChoice | KafkaBackendError]()
# The broker this session started, from the first test that asked for it to the end.
_RUNNING_BACKEND = pytest.StashKey[KafkaBackend]()
# Set on a test whose report already carries the broker's exit report.
_BROKER_EXIT_SHOWN = pytest.StashKey[bool]()
_KAFKA_FIXTURE = "kafka_backend"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"integration: needs a Kafka broker; {BACKEND_ENV_VAR}="
        f"{'|'.join(BACKEND_CHOICES)} picks which (default auto)",
    )
    config.addinivalue_line(
        "markers",
        "cluster: submits the packaged job to a Spark standalone cluster it starts on "
        "127.0.0.1 (also integration)",
    )


def _backend_choice(config: pytest.Config) -> BackendChoice | KafkaBackendError:
    if _BACKEND_CHOICE not in config.stash:
        try:
            choice: BackendChoice | KafkaBackendError = resolve_backend_choice(os.environ)
        except KafkaBackendError as exc:
            # Reported in the header and raised by the fixture, so that tests which need no
            # broker still run when KAFKA_BACKEND is wrong.
            choice = exc
        config.stash[_BACKEND_CHOICE] = choice
    return config.stash[_BACKEND_CHOICE]


def pytest_report_collectionfinish(
    config: pytest.Config, start_path: Path, items: Sequence[pytest.Item]
) -> list[str]:
    # After collection, not in the header: choosing auto's backend may resolve Kafka's jars
    # with Maven (once per machine), which a run of unit tests alone should never wait for.
    if not any(_needs_broker(item) or item.get_closest_marker("integration") for item in items):
        return ["kafka backend: not started (no selected test needs Kafka)", _connector_line()]
    choice = _backend_choice(config)
    if isinstance(choice, KafkaBackendError):
        return [f"kafka backend: INVALID ({choice})", _connector_line()]
    description = describe_backend_choice(choice.name, os.environ)
    # The passed-over notes say why auto did not take a better backend, e.g. no mvn.
    return [
        f"kafka backend: {choice.name} ({description})",
        *(f"  {note}" for note in choice.passed_over),
        _connector_line(),
    ]


def _connector_line() -> str:
    try:
        connector = support.spark.connector_under_test()
    except Exception as exc:  # a bad KAFKA_CONNECTOR or settings: say so, never crash here
        return f"kafka connector: INVALID ({exc})"
    version = pyspark.__version__
    if connector == "builtin":
        reads = f"Spark's spark-sql-kafka-0-10_2.13 {version}, jars from Maven"
    else:
        reads = "the pykafka source on confluent-kafka"
    return f"kafka connector: {connector} ({reads}; Spark {version}, master local[1])"


@pytest.fixture(scope="session")
def kafka_backend(pytestconfig: pytest.Config) -> Iterator[KafkaBackend]:
    """A running Kafka broker, started only if some test in the session asks for it."""
    choice = _backend_choice(pytestconfig)
    if isinstance(choice, KafkaBackendError):
        # The message says everything; a traceback into the env parsing would only add noise.
        pytest.fail(str(choice), pytrace=False)
    with ExitStack() as stack:
        failure = None
        try:
            # By name: auto was resolved once, for the header, and is not probed again.
            backend = stack.enter_context(start_kafka_backend(choice.name))
        except KafkaBackendError as exc:
            failure = str(exc)
        if failure is not None:
            # One line (or a broker's log tail) explains it: no traceback into the starter,
            # and failing outside the except block shows no "during handling" chain.
            pytest.fail(failure, pytrace=False)
        pytestconfig.stash[_RUNNING_BACKEND] = backend
        try:
            yield backend
        finally:
            del pytestconfig.stash[_RUNNING_BACKEND]


def _needs_broker(item: pytest.Item) -> bool:
    # Directly or through another fixture; not a test that asks for it at run time with
    # request.getfixturevalue (its failures still get the broker's log, see below).
    return isinstance(item, pytest.Function) and _KAFKA_FIXTURE in item.fixturenames


def _broker_exit(config: pytest.Config) -> str | None:
    backend = config.stash.get(_RUNNING_BACKEND, None)
    return None if backend is None else backend.exit_report()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Once the session's broker is gone, a test that needs it fails at once with the
    # broker's log, instead of waiting out its client timeouts.
    if _needs_broker(item):
        exited = _broker_exit(item.config)
        if exited is not None:
            item.stash[_BROKER_EXIT_SHOWN] = True
            pytest.fail(exited, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A broker that died during a test fails that test, with the broker's last log lines.

    A test that needs the broker fails even if it passed (it may have finished its Kafka
    work first; the next one could not). Any failing test gets the log attached, as the
    broker's death is a likely cause. One ``poll()`` per test phase.
    """
    report = yield
    if report.when not in ("setup", "call") or item.stash.get(_BROKER_EXIT_SHOWN, False):
        return report
    exited = _broker_exit(item.config)
    if exited is None:
        return report
    if report.failed:
        report.sections.append(("Kafka broker exited", exited))
        item.stash[_BROKER_EXIT_SHOWN] = True
    elif report.when == "call" and report.passed and _needs_broker(item):
        report.outcome = "failed"
        report.longrepr = f"the test passed, but the Kafka broker it uses exited:\n{exited}"
        item.stash[_BROKER_EXIT_SHOWN] = True
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The kill trials' table, when any ran: where each kill landed and the verdict."""
    if support.soak_table.ROWS:
        terminalreporter.section("kill -9 trials")
        for line in support.soak_table.render(support.soak_table.ROWS):
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One SparkSession for the whole run, started only if some test asks for it."""
    session = support.spark.build_test_spark_session("tests")
    yield session
    session.stop()
