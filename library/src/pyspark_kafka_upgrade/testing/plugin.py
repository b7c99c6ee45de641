"""The pytest plugin: real Kafka and one SparkSession for a project's tests, and the report.

Loaded by the ``pytest11`` entry point wherever the library is installed. It gives:

- ``kafka_backend``: a running broker for the session, started only if a test asks for it.
  ``KAFKA_BACKEND=auto|external|testcontainers|apache|noida`` picks which (see
  ``_kafka``); a broker that dies fails the tests that use it, with its log.
- ``secured_kafka``: Apache Kafka on SASL_SSL with users, a throwaway CA and ACLs
  (``_kafka.secured``), started only if a test asks for it.
- ``spark``: one local SparkSession for the session, with the connector under test
  (``KAFKA_CONNECTOR=python|builtin``, else the project's own setting), and its event log
  in ``spark_event_log``.
- ``project``: the project under test, named by the ini option ``pyspark_kafka_upgrade_project``
  (``"package.pipeline:PROJECT"``), which a project must set: with no default, a project
  cannot test the library's reference pipeline by mistake.
- Every JVM a test starts (Spark's, the broker's) runs with C1 only (``_jvm``), and
  Spark's map a class archive of Spark's classes, built once per Java and Spark install
  (``_class_archive``), unless the environment sets ``SPARK_SUBMIT_OPTS`` and
  ``SPARK_DAEMON_JAVA_OPTS`` itself.
- The report header names the backend, the Kafka version and the connector, and every
  test that needs a broker is marked ``integration``.

Loading it imports neither pyspark, py4j, a Kafka client, a container library nor
cryptography (``tests/unit/test_plugin_imports.py`` checks): each loads when a fixture that
needs it runs, so installing the library never breaks pytest for tests that use none of
this, where those packages are absent. Hooks that run in every session say in one line what
they cannot tell without them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Generator, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade.testing._class_archive import ClassArchive, use_class_archive
from pyspark_kafka_upgrade.testing._connector import connector_under_test, sink_under_test
from pyspark_kafka_upgrade.testing._jvm import use_test_jvm_options
from pyspark_kafka_upgrade.testing._kafka.backend import (
    BACKEND_ENV_VAR,
    KafkaBackend,
    KafkaBackendError,
    KafkaImageUnavailableError,
)
from pyspark_kafka_upgrade.testing._kafka.choice import (
    BACKEND_CHOICES,
    BackendChoice,
    describe_backend_choice,
    resolve_backend_choice,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pyspark_kafka_upgrade.testing._kafka.secured import SecuredKafka

PROJECT_OPTION = "pyspark_kafka_upgrade_project"
_PROJECT = pytest.StashKey[Project]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(PROJECT_OPTION, "the project under test, as module:attribute", default="")


def project_under_test(config: pytest.Config) -> Project:
    """The project the ini option names, imported once per session."""
    if _PROJECT not in config.stash:
        named = str(config.getini(PROJECT_OPTION)).strip()
        if not named:
            raise pytest.UsageError(
                f'set {PROJECT_OPTION} = "<package>.pipeline:PROJECT" in '
                "[tool.pytest.ini_options]: the project these tests are about"
            )
        module, _, attribute = named.partition(":")
        found = getattr(importlib.import_module(module), attribute or "PROJECT", None)
        if not isinstance(found, Project):
            raise pytest.UsageError(
                f"{PROJECT_OPTION} = {named!r} does not name a pyspark_kafka_upgrade Project"
            )
        config.stash[_PROJECT] = found
    return config.stash[_PROJECT]


@pytest.fixture(scope="session")
def project(pytestconfig: pytest.Config) -> Project:
    """The project under test: its command, settings, events and query."""
    return project_under_test(pytestconfig)


# The choice is resolved once per session (it may probe Docker, Java and Maven, each with a
# deadline) and shared by the report header and the fixture, so the header names the broker
# actually used.
_BACKEND_CHOICE = pytest.StashKey[BackendChoice | KafkaBackendError]()
# The broker this session started, from the first test that asked for it to the end.
_RUNNING_BACKEND = pytest.StashKey[KafkaBackend]()
# Set on a test whose report already carries the broker's exit report.
_BROKER_EXIT_SHOWN = pytest.StashKey[bool]()
# The class archive this session's Spark JVMs map, or why there is none.
_CLASS_ARCHIVE = pytest.StashKey[ClassArchive]()
_KAFKA_FIXTURE = "kafka_backend"
_SECURED_FIXTURE = "secured_kafka"


def pytest_configure(config: pytest.Config) -> None:
    # Before any JVM starts, so that the session's, its subprocesses' and their children's
    # inherit the options (an environment that sets its own keeps them).
    use_test_jvm_options(os.environ)
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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Before pytest's own -m selection runs, so that `-m "not integration"` leaves out every
    # test that would start a broker, whether or not its author marked it.
    for item in items:
        if _needs_broker(item) or _SECURED_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # Before the report's lines and any test: Spark's JVMs map the class archive where the
    # run starts many of them (the integration tests' commands, one JVM each). A run of
    # unit tests starts one and is not made to wait for a build.
    unneeded = None
    if session.config.option.collectonly:
        unneeded = "no test runs"
    elif not any(item.get_closest_marker("integration") for item in session.items):
        unneeded = "no selected test needs Kafka"
    session.config.stash[_CLASS_ARCHIVE] = use_class_archive(os.environ, unneeded)


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
        return [
            "kafka backend: not started (no selected test needs Kafka)",
            _connector_line(config),
            _archive_line(config),
        ]
    choice = _backend_choice(config)
    if isinstance(choice, KafkaBackendError):
        return [
            f"kafka backend: INVALID ({choice})",
            _connector_line(config),
            _archive_line(config),
        ]
    description = describe_backend_choice(choice.name, os.environ)
    # The passed-over notes say why auto did not take a better backend, e.g. no mvn.
    return [
        f"kafka backend: {choice.name} ({description})",
        *(f"  {note}" for note in choice.passed_over),
        _connector_line(config),
        _archive_line(config),
    ]


def _connector_line(config: pytest.Config) -> str:
    version = _pyspark_version()
    if version is None:
        return "kafka connector: none (pyspark is not installed)"
    try:
        connector = connector_under_test(project_under_test(config))
    except Exception as exc:  # a bad KAFKA_CONNECTOR or settings: say so, never crash here
        return f"kafka connector: INVALID ({exc})"
    if connector == "builtin":
        reads = f"Spark's spark-sql-kafka-0-10_2.13 {version}, jars from Maven"
    else:
        reads = "the pykafka source on confluent-kafka"
    return f"kafka connector: {connector} ({reads}; Spark {version}, master local[1])"


def _archive_line(config: pytest.Config) -> str:
    archive = config.stash.get(_CLASS_ARCHIVE, None)
    return f"spark class archive: {'none' if archive is None else archive.note}"


def _pyspark_version() -> str | None:
    """pyspark's version, read without importing it; None where it is not installed."""
    if importlib.util.find_spec("pyspark") is None:
        return None
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        # On the path but not installed by pip (a Spark home's python/): ask the package.
        return str(importlib.import_module("pyspark").__version__)


@pytest.fixture(scope="session")
def kafka_backend(pytestconfig: pytest.Config) -> Iterator[KafkaBackend]:
    """A running Kafka broker, started only if some test in the session asks for it."""
    choice = _backend_choice(pytestconfig)
    if isinstance(choice, KafkaBackendError):
        # The message says everything; a traceback into the env parsing would only add noise.
        pytest.fail(str(choice), pytrace=False)
    # Here, not at the top: starting a broker needs its client library, and maybe more.
    from pyspark_kafka_upgrade.testing._kafka.start import start_kafka_backend

    with ExitStack() as stack:
        failure = None
        try:
            # By name: auto was resolved once, for the header, and is not probed again.
            backend = stack.enter_context(start_kafka_backend(choice.name))
        except KafkaImageUnavailableError as exc:
            # Every integration test would fail the same way: one line, and the run stops.
            pytest.exit(str(exc), returncode=pytest.ExitCode.TESTS_FAILED)
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


@pytest.fixture(scope="session")
def spark_event_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of the session's Spark event log (what a history server shows)."""
    return tmp_path_factory.mktemp("spark-events")


@pytest.fixture(scope="session")
def spark(pytestconfig: pytest.Config, spark_event_log: Path) -> Iterator[SparkSession]:
    """One SparkSession for the whole run, started only if some test asks for it."""
    # Here, not at the top: only this fixture needs pyspark.
    from pyspark_kafka_upgrade.testing._spark import build_test_spark_session

    project = project_under_test(pytestconfig)
    session = build_test_spark_session(
        "tests",
        connector_under_test(project),
        event_log_dir=spark_event_log,
        delta=sink_under_test(project) == "delta",
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def secured_kafka() -> Iterator[SecuredKafka]:
    """Apache Kafka on SASL_SSL with SCRAM and PLAIN logins, a throwaway CA and ACLs,
    started only if some test asks for it (whatever ``KAFKA_BACKEND`` says: it needs Java
    and Kafka's jars, as the ``apache`` backend does)."""
    # Here, not at the top: certificates need the cryptography package, which only this needs.
    from pyspark_kafka_upgrade.testing._kafka.secured import start_secured_kafka

    with ExitStack() as stack:
        failure = None
        try:
            broker = stack.enter_context(start_secured_kafka(os.environ))
        except KafkaBackendError as exc:
            failure = str(exc)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        yield broker
