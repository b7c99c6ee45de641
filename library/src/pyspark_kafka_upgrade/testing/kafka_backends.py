"""Kafka brokers for tests, and small confluent-kafka helpers to drive them.

The broker is chosen with the environment variable ``KAFKA_BACKEND``:

``external``
    An already running cluster at ``KAFKA_BOOTSTRAP_SERVERS`` (for example in CI).
``testcontainers``
    A throwaway KRaft container (``kafka_container``), published on 127.0.0.1. Needs a
    container engine behind Docker's API (Docker, or podman's service). The image is the
    official ``apache/kafka:4.4.0``; ``KAFKA_IMAGE`` may name another ``apache/kafka`` tag
    (3.7.0 or later) or a Confluent ``cp-kafka`` image of tag 7.0.0 or later.
``apache``
    Real Apache Kafka (``KAFKA_VERSION``, default 4.4.0), run as a child process on
    127.0.0.1: one JVM as broker and KRaft controller, a fresh log directory per session.
    Its jars come from Maven once, into the per-user jar cache (``JAR_CACHE_DIR``); needs
    Java 17+ and, until the jars are cached, ``mvn``.
``noida``
    The ``noida-db`` broker from PyPI: a single binary that speaks the Kafka wire protocol,
    started as a child process on 127.0.0.1 with a fresh data directory. Needs nothing but
    pip. ``local`` is accepted as its former name.
``auto`` (the default)
    ``external`` if ``KAFKA_BOOTSTRAP_SERVERS`` is set, else ``testcontainers`` if a Docker
    daemon answers and has (or can pull) the image, else ``apache`` if Java and the Kafka
    jars can be had, else ``noida``. A backend passed over for a reason worth fixing (an
    image that cannot be pulled, no mvn) is named in one line with that reason.

Brokers started as child processes (``apache``, ``noida``) live in their own process group,
so a Ctrl-C at the terminal reaches only the test run, which then stops them in order; and
the kernel kills them should the test process die without stopping them (Linux).
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import importlib
import importlib.metadata
import importlib.resources
import importlib.util
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)

# confluent_kafka.admin is the documented home of these classes, but it re-exports them
# without __all__, which mypy --strict reports; "unused-ignore" keeps this quiet once a
# release declares them.
from confluent_kafka.admin import (  # type: ignore[attr-defined, unused-ignore]
    AdminClient,
    ConfigResource,
    NewTopic,
)

from pyspark_kafka_upgrade._adapters.spark import maven
from pyspark_kafka_upgrade._adapters.spark.session import (
    SparkEnvironmentError,
    check_java,
    java_executable,
)
from pyspark_kafka_upgrade.testing.broker_settings import ONE_NODE_TEST_SETTINGS
from pyspark_kafka_upgrade.testing.kafka_container import (
    APACHE_REPOSITORY,
    ImageUnavailableError,
    KafkaContainerError,
    KafkaImage,
    describe_image,
    parse_image,
    provide_image,
    running_kafka,
)
from pyspark_kafka_upgrade.testing.waiting import wait_until

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message

BACKEND_ENV_VAR = "KAFKA_BACKEND"
BOOTSTRAP_ENV_VAR = "KAFKA_BOOTSTRAP_SERVERS"
IMAGE_ENV_VAR = "KAFKA_IMAGE"
VERSION_ENV_VAR = "KAFKA_VERSION"

DEFAULT_KAFKA_VERSION = "4.4.0"
# The official image of the same release as the apache backend's broker.
DEFAULT_KAFKA_IMAGE = f"{APACHE_REPOSITORY}:{DEFAULT_KAFKA_VERSION}"
# In the order auto tries them, after "auto" itself.
BACKEND_CHOICES = ("auto", "external", "testcontainers", "apache", "noida")
# Former names, still accepted so that existing CI settings keep working.
_BACKEND_ALIASES = {"local": "noida"}

# Message.timestamp() reports this type for timestamps set by the producer (value 1).
CREATE_TIME = TIMESTAMP_CREATE_TIME

_NOIDA_PACKAGE = "noida_db"
_NOIDA_DISTRIBUTION = "noida-db"
_NOIDA_START_TIMEOUT_S = 15.0
_NOIDA_STOP_TIMEOUT_S = 10.0
# noida-db announces each service on stdout as "  kafka          127.0.0.1:42429".
_NOIDA_KAFKA_LINE = re.compile(r"^\s*kafka\s+(?P<address>\S+:\d+)\s*$")
# The wheel's binary is linked against a newer glibc's optional symbol; the loader complains
# on stderr but the broker works. Hide that line so it is not mistaken for the cause of a
# real failure.
_HARMLESS_STDERR = re.compile(r"weak version `GLIBC_[\d.]+' not found")

# Kafka 4 runs on log4j2; its runtime dependencies bring slf4j-api 1.7.x and log4j-core, so
# the slf4j 1.x binding of the same log4j release routes the broker's logging into log4j2.
_KAFKA_LOGGING_BINDING = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.5"
# 4.x only: the configuration below is KRaft-only, and 3.x logs through log4j 1.
_KAFKA_VERSION_PATTERN = re.compile(r"4\.\d+\.\d+")
# Cold, Maven downloads about 40 jars (~35 MB); afterwards the cache answers at once.
_KAFKA_JARS_TIMEOUT_S = 300.0
# Measured on 2 shared cores: format ~1.5 s, startup ~3 s, SIGTERM to exit ~1.5 s. The
# deadlines leave room for a machine busy with Spark.
_KAFKA_FORMAT_TIMEOUT_S = 60.0
_KAFKA_START_TIMEOUT_S = 90.0
_KAFKA_STOP_TIMEOUT_S = 30.0
# A free port found by binding port 0 can be taken by someone else before the JVM binds it.
_KAFKA_START_ATTEMPTS = 3
_KAFKA_LOG_TAIL_LINES = 40
# A small heap: test topics hold kilobytes, and the machine runs Spark next to the broker.
# On OutOfMemoryError the JVM exits, so the broker is reported dead rather than limping on.
_KAFKA_JVM_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+ExitOnOutOfMemoryError")

_DOCKER_PROBE_TIMEOUT_S = 3
_BROKER_READY_TIMEOUT_S = 30.0

# From <linux/prctl.h>: ask the kernel to send a signal when the parent dies.
_PR_SET_PDEATHSIG = 1

# librdkafka is chatty (every reconnect, every broker going away at teardown). Routing it into
# a Python logger lets pytest capture it and show it only for failing tests.
_LIBRDKAFKA_LOGGER = logging.getLogger("tests.support.librdkafka")

Progress = Callable[[str], None]


class KafkaBackendError(RuntimeError):
    """A Kafka test backend was misconfigured or could not be started."""


class KafkaImageUnavailableError(KafkaBackendError):
    """The container engine answers but cannot provide the Kafka image: with
    ``KAFKA_BACKEND=testcontainers`` no integration test can run, so the run stops."""


def _still_running() -> str | None:
    return None


@dataclass(frozen=True)
class KafkaBackend:
    """A running broker that tests can connect to."""

    name: str
    bootstrap_servers: str
    description: str
    # The broker's process, for the backends that run one as a child of this process.
    pid: int | None = None
    # None while the broker runs; once it has exited, what a failing test should show: the
    # exit code and the broker's last log lines. A poll, cheap enough to call per test.
    exit_report: Callable[[], str | None] = field(default=_still_running, repr=False, compare=False)


@dataclass(frozen=True)
class BackendChoice:
    """The backend ``KAFKA_BACKEND`` selects, and why ``auto`` passed over better ones."""

    name: str
    # One line per backend that auto preferred but could not use here.
    passed_over: tuple[str, ...] = ()


# Kafka headers in order; a key may repeat and a value may be null.
Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Record:
    """A record to produce, with its partition and CreateTime chosen by the test."""

    partition: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: Headers | None = None


@dataclass(frozen=True)
class ConsumedRecord:
    """A record as read back from the broker."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    timestamp_type: int


# --------------------------------------------------------------------------------------------
# Choosing a backend
# --------------------------------------------------------------------------------------------


def docker_is_available(timeout: int = _DOCKER_PROBE_TIMEOUT_S) -> bool:
    """Whether testcontainers is installed and a Docker daemon answers a ping quickly."""
    try:
        if importlib.util.find_spec("testcontainers") is None:
            return False
        # Imported by name so that the untyped docker package does not need type stubs.
        docker: Any = importlib.import_module("docker")
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=timeout)
    except Exception:
        # No socket, bad DOCKER_HOST, unreadable config: all mean "no usable Docker".
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


def kafka_version(env: Mapping[str, str]) -> str:
    """The Apache Kafka version of the ``apache`` backend: ``KAFKA_VERSION``, else 4.4.0."""
    raw = env.get(VERSION_ENV_VAR, "")
    version = raw.strip() or DEFAULT_KAFKA_VERSION
    if _KAFKA_VERSION_PATTERN.fullmatch(version) is None:
        raise KafkaBackendError(
            f"{VERSION_ENV_VAR}={raw!r} is not an Apache Kafka 4.x release such as "
            f"{DEFAULT_KAFKA_VERSION}: the apache backend runs Kafka 4 (KRaft, log4j2) only"
        )
    return version


def kafka_coordinates(version: str) -> list[str]:
    """The Maven coordinates whose runtime classpath is a runnable broker."""
    return [f"org.apache.kafka:kafka_2.13:{version}", _KAFKA_LOGGING_BINDING]


def apache_problem(env: Mapping[str, str], progress: Progress | None = None) -> str | None:
    """None when the ``apache`` backend can start here, else one line saying why not.

    Checks Java, then the broker's jars: from the jar cache, else resolved with ``mvn`` now
    (once per machine; ``progress`` hears about it). Every step has a deadline.

    Raises:
        KafkaBackendError: ``KAFKA_VERSION`` is not a Kafka 4.x version (a setting to fix,
            not a reason to fall back).
    """
    try:
        _apache_runtime(env, progress)
    except _ApacheUnavailableError as exc:
        return str(exc)
    return None


def image_problem(env: Mapping[str, str], progress: Progress | None = None) -> str | None:
    """None when the engine has, or can pull, the Kafka image, else one line saying why not.

    Raises:
        KafkaBackendError: ``KAFKA_IMAGE`` names an image this backend cannot run (a setting
            to fix, not a reason to fall back).
    """
    image = container_image(env)
    try:
        provide_image(image, progress or _print_to_stderr)
    except KafkaContainerError as exc:
        return str(exc)
    return None


def container_image(env: Mapping[str, str]) -> KafkaImage:
    """The testcontainers backend's image: ``KAFKA_IMAGE``, else the official 4.4.0.

    Raises:
        KafkaBackendError: not an image this backend can run.
    """
    try:
        return parse_image(env.get(IMAGE_ENV_VAR, "").strip() or DEFAULT_KAFKA_IMAGE)
    except KafkaContainerError as exc:
        raise KafkaBackendError(str(exc)) from None


def resolve_backend_choice(
    env: Mapping[str, str],
    docker_available: Callable[[], bool] = docker_is_available,
    apache_unavailable: Callable[[Mapping[str, str]], str | None] = apache_problem,
    image_unavailable: Callable[[Mapping[str, str]], str | None] = image_problem,
) -> BackendChoice:
    """The backend that ``env`` selects, and why ``auto`` passed over the ones it prefers.

    The probes run only for ``auto``, and only as far as needed: ``docker_available`` when no
    bootstrap servers are set, then ``image_unavailable`` (None, or the reason) when it
    answers, then ``apache_unavailable`` (the same). Tests pass a fake environment and
    fake probes.

    Raises:
        KafkaBackendError: ``KAFKA_BACKEND`` is not one of :data:`BACKEND_CHOICES`, or auto
            reached a backend whose setting is invalid (``KAFKA_IMAGE``, ``KAFKA_VERSION``).
    """
    raw = env.get(BACKEND_ENV_VAR, "")
    choice = raw.strip().lower() or "auto"
    choice = _BACKEND_ALIASES.get(choice, choice)
    if choice not in BACKEND_CHOICES:
        allowed = ", ".join(BACKEND_CHOICES)
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}={raw!r} is not a Kafka test backend; allowed values: {allowed}"
        )
    if choice != "auto":
        return BackendChoice(choice)
    if env.get(BOOTSTRAP_ENV_VAR, "").strip():
        return BackendChoice("external")
    passed_over: tuple[str, ...] = ()
    if docker_available():
        problem = image_unavailable(env)
        if problem is None:
            return BackendChoice("testcontainers")
        passed_over = (f"testcontainers skipped: {problem}; trying the next backend",)
    version = kafka_version(env)
    problem = apache_unavailable(env)
    if problem is None:
        return BackendChoice("apache", passed_over)
    return BackendChoice(
        "noida",
        (
            *passed_over,
            f"apache skipped: {problem} (tried: java, then Apache Kafka {version}'s jars "
            "from the jar cache, else mvn); using noida-db instead",
        ),
    )


def describe_backend_choice(name: str, env: Mapping[str, str]) -> str:
    """One line saying what a resolved backend name will mean when the broker is started."""
    if name == "external":
        bootstrap = env.get(BOOTSTRAP_ENV_VAR, "").strip()
        if not bootstrap:
            return f"existing cluster, but {BOOTSTRAP_ENV_VAR} is not set: integration tests fail"
        return f"existing cluster at {BOOTSTRAP_ENV_VAR}={bootstrap}"
    if name == "testcontainers":
        try:
            return describe_image(container_image(env))
        except KafkaBackendError as exc:
            return f"cannot start: {exc}"
    if name == "apache":
        try:
            version = kafka_version(env)
        except KafkaBackendError as exc:
            return f"cannot start: {exc}"
        coordinates = kafka_coordinates(version)
        entry = maven.cache_root(env) / maven.entry_name(coordinates)
        jars = (
            f"jars from {entry}"
            if maven.cached_jars(coordinates, env)
            else f"jars resolved with mvn into {entry} on first use"
        )
        return f"Apache Kafka {version}, local KRaft process on 127.0.0.1, {jars}"
    if name == "noida":
        return (
            f"{_noida_version()} broker binary from PyPI on 127.0.0.1 with a fresh data dir, "
            "started on first use"
        )
    raise KafkaBackendError(f"unknown Kafka test backend {name!r}")


# --------------------------------------------------------------------------------------------
# Starting a backend
# --------------------------------------------------------------------------------------------


@contextmanager
def start_kafka_backend(
    choice: str | None = None, progress: Progress | None = None
) -> Iterator[KafkaBackend]:
    """Start (or connect to) the chosen broker, wait until it answers, and stop it on exit.

    ``choice`` overrides ``KAFKA_BACKEND``; ``None`` reads it from the environment.
    ``progress`` hears one-line notes (jars being resolved, a backend auto passed over);
    the default prints them on stderr.

    The ``apache`` and ``noida`` brokers are killed by the kernel if this process dies, and
    also if the *thread* that started them ends (Linux's parent-death signal follows the
    thread): start them from a thread that outlives their use, such as the main thread.
    """
    say = progress or _print_to_stderr
    env: dict[str, str] = dict(os.environ)
    if choice is not None:
        env[BACKEND_ENV_VAR] = choice
    resolved = resolve_backend_choice(
        env,
        apache_unavailable=lambda probe_env: apache_problem(probe_env, say),
        image_unavailable=lambda probe_env: image_problem(probe_env, say),
    )
    for note in resolved.passed_over:
        say(note)
    starters: dict[str, Callable[[Mapping[str, str]], AbstractContextManager[KafkaBackend]]] = {
        "external": _external_backend,
        "testcontainers": lambda container_env: _testcontainers_backend(container_env, say),
        "apache": lambda apache_env: _apache_backend(apache_env, say),
        "noida": _noida_backend,
    }
    with starters[resolved.name](env) as backend:
        _wait_for_broker(backend)
        yield backend


@contextmanager
def _external_backend(env: Mapping[str, str]) -> Iterator[KafkaBackend]:
    bootstrap = env.get(BOOTSTRAP_ENV_VAR, "").strip()
    if not bootstrap:
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=external needs {BOOTSTRAP_ENV_VAR} (e.g. localhost:9092); "
            "it is not set"
        )
    yield KafkaBackend("external", bootstrap, f"existing cluster at {bootstrap}")


@contextmanager
def _testcontainers_backend(env: Mapping[str, str], progress: Progress) -> Iterator[KafkaBackend]:
    image = container_image(env)
    if importlib.util.find_spec("testcontainers") is None:
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=testcontainers needs the 'testcontainers' package "
            "(the library's 'testing' extra)"
        )
    if not docker_is_available():
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=testcontainers needs a container engine behind Docker's API, "
            "and none answered (is DOCKER_HOST right? see the guide's 'Kafka for the tests')"
        )
    failure: KafkaBackendError | None = None
    try:
        with running_kafka(image, env, progress) as kafka:
            yield KafkaBackend(
                "testcontainers",
                kafka.bootstrap_servers,
                kafka.description,
                exit_report=kafka.exit_report,
            )
    except ImageUnavailableError as exc:
        failure = KafkaImageUnavailableError(f"{BACKEND_ENV_VAR}=testcontainers: {exc}")
    except KafkaContainerError as exc:
        failure = KafkaBackendError(f"{BACKEND_ENV_VAR}=testcontainers: {exc}")
    if failure is not None:
        raise failure


# --------------------------------------------------------------------------------------------
# apache: Apache Kafka as a child process
# --------------------------------------------------------------------------------------------


class _ApacheUnavailableError(KafkaBackendError):
    """Java or the Kafka jars cannot be had here: auto falls back, an explicit choice fails."""


def _apache_runtime(
    env: Mapping[str, str], progress: Progress | None
) -> tuple[str, list[Path], str]:
    """Java, the broker's classpath and its version; raises _ApacheUnavailableError."""
    version = kafka_version(env)
    java = _java_executable(env)
    try:
        jars = maven.runtime_jars(
            kafka_coordinates(version),
            env=env,
            timeout_s=_KAFKA_JARS_TIMEOUT_S,
            progress=progress,
        )
    except maven.MavenError as exc:
        raise _ApacheUnavailableError(f"no jars for Apache Kafka {version}: {exc}") from None
    return java, jars, version


def _java_executable(env: Mapping[str, str]) -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH, checked as Spark's session checks it.

    Kafka 4 needs Java 17 or later, as Spark 4 does: one check serves both.
    """
    try:
        check_java(env)
        return java_executable(env)
    except SparkEnvironmentError as exc:
        raise _ApacheUnavailableError(str(exc)) from None


@contextmanager
def _apache_backend(env: Mapping[str, str], progress: Progress) -> Iterator[KafkaBackend]:
    with apache_broker(env, progress) as broker:
        yield KafkaBackend(
            "apache",
            broker.bootstrap_servers,
            f"Apache Kafka {broker.version} (KRaft) at {broker.bootstrap_servers}, pid "
            f"{broker.pid}, log {broker.log_file}",
            pid=broker.pid,
            exit_report=broker.exit_report,
        )


@dataclass(frozen=True)
class Listeners:
    """Where a broker listens, and how a client of the test's own reaches it."""

    bootstrap_servers: str
    # server.properties lines: listeners, their protocols, and what they need (TLS, SASL).
    properties: Mapping[str, str]
    # librdkafka settings (besides bootstrap.servers) of a client allowed everything; the
    # readiness check and the test helpers connect with them.
    admin_client: Mapping[str, str] = field(default_factory=dict)


class ListenerLayout(Protocol):
    """The listeners of a broker, given free ports; the controller's port is the last."""

    ports: int

    def listeners(self, ports: Sequence[int]) -> Listeners: ...


class PlaintextListeners:
    """One PLAINTEXT listener for clients and one for the KRaft controller."""

    ports = 2

    def listeners(self, ports: Sequence[int]) -> Listeners:
        broker_port, controller_port = ports
        return Listeners(
            f"127.0.0.1:{broker_port}",
            {
                "listeners": (
                    f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}"
                ),
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
                "inter.broker.listener.name": "PLAINTEXT",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            },
        )


@contextmanager
def apache_broker(
    env: Mapping[str, str],
    progress: Progress,
    layout: ListenerLayout | None = None,
) -> Iterator[ApacheBroker]:
    """A running Apache Kafka broker with ``layout``'s listeners, stopped and removed on exit.

    Raises:
        KafkaBackendError: Java or the jars cannot be had, or the broker did not start.
    """
    try:
        java, jars, version = _apache_runtime(env, progress)
    except _ApacheUnavailableError as exc:
        raise KafkaBackendError(f"{BACKEND_ENV_VAR}=apache: {exc}") from None
    # A fresh directory per session for the log dirs, the configuration and the broker's log:
    # leftovers from an earlier run would carry its topics and offsets into this one.
    work_dir = Path(tempfile.mkdtemp(prefix="kafka-test-apache-"))
    try:
        broker = ApacheBroker(java, jars, version, work_dir, layout or PlaintextListeners())
        try:
            broker.start()
            yield broker
        finally:
            broker.stop()
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


class _PortTakenError(Exception):
    """The JVM could not bind a port picked for it: try again with new ones."""


class ApacheBroker:
    """One JVM that is a KRaft controller and a broker, listening on 127.0.0.1 only.

    Its log4j2 logs go to ``broker.log`` and its stdout and stderr (JVM errors, crashes) to
    ``jvm-output.log``, both in ``work_dir``; failures quote their last lines.
    """

    def __init__(
        self,
        java: str,
        jars: Sequence[Path],
        version: str,
        work_dir: Path,
        layout: ListenerLayout,
    ) -> None:
        self.version = version
        self.work_dir = work_dir
        self._layout = layout
        self.log_file = work_dir / "broker.log"
        self._java = java
        self._classpath = os.pathsep.join(str(jar) for jar in jars)
        self._jar_count = len(jars)
        self._jar_dir = jars[0].parent if jars else Path()
        self._work_dir = work_dir
        self._properties = work_dir / "server.properties"
        self._log4j = work_dir / "log4j2.properties"
        self._output_file = work_dir / "jvm-output.log"
        self._output: IO[bytes] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.bootstrap_servers = ""
        self.admin_client: Mapping[str, str] = {}
        self.pid: int | None = None

    # ---- starting --------------------------------------------------------------------------

    def start(self) -> None:
        """Format the log dir, start the JVM and wait until it serves metadata."""
        self._write_log4j_config()
        self._write_properties(_free_ports(self._layout.ports))
        self._format()
        for attempt in range(1, _KAFKA_START_ATTEMPTS + 1):
            try:
                self._launch_and_wait()
                return
            except _PortTakenError:
                if attempt == _KAFKA_START_ATTEMPTS:
                    raise KafkaBackendError(
                        self._failure(
                            f"Apache Kafka {self.version} could not bind its ports "
                            f"{_KAFKA_START_ATTEMPTS} times"
                        )
                    ) from None
                # The log dir stays formatted: only the listeners change.
                self._write_properties(_free_ports(self._layout.ports))

    def _java_command(self, main_class: str, *arguments: str) -> list[str]:
        return [
            self._java,
            *_KAFKA_JVM_OPTIONS,
            f"-Dlog4j2.configurationFile={self._log4j}",
            "-cp",
            self._classpath,
            main_class,
            *arguments,
        ]

    def _write_log4j_config(self) -> None:
        self._log4j.write_text(
            "\n".join(
                [
                    "status = warn",
                    # Log4j's own shutdown hook would stop logging while the broker is still
                    # shutting down; without it the log keeps the broker's last words.
                    "shutdownHook = disable",
                    "appender.file.type = File",
                    "appender.file.name = file",
                    f"appender.file.fileName = {self.log_file}",
                    "appender.file.layout.type = PatternLayout",
                    "appender.file.layout.pattern = [%d] %p %m (%c)%n",
                    "rootLogger.level = info",
                    "rootLogger.appenderRef.file.ref = file",
                    # Every config object logs all its values at INFO: about 2,000 lines per
                    # start that would push the interesting lines out of a failure's tail.
                    "logger.config.name = org.apache.kafka.common.config.AbstractConfig",
                    "logger.config.level = warn",
                    "",
                ]
            ),
            encoding="utf-8",
        )

    def _write_properties(self, ports: Sequence[int]) -> None:
        # KRaft with a static voter list, so formatting needs no --standalone. The controller
        # port must be a real one: the voter list names it.
        listeners = self._layout.listeners(ports)
        self.bootstrap_servers = listeners.bootstrap_servers
        self.admin_client = listeners.admin_client
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{ports[-1]}",
            "controller.listener.names": "CONTROLLER",
            **listeners.properties,
            "log.dirs": str(self._work_dir / "data"),
            **ONE_NODE_TEST_SETTINGS,
        }
        self._properties.write_text(
            "".join(f"{key}={value}\n" for key, value in settings.items()), encoding="utf-8"
        )

    def _format(self) -> None:
        command = self._java_command(
            "kafka.tools.StorageTool",
            "format",
            "-c",
            str(self._properties),
            "-t",
            _kafka_cluster_id(),
        )
        try:
            result = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=_KAFKA_FORMAT_TIMEOUT_S,
                check=False,
                start_new_session=True,
                preexec_fn=_dies_with_this_process(),
            )
        except subprocess.TimeoutExpired:
            raise KafkaBackendError(
                self._failure(
                    f"formatting the log dir of Apache Kafka {self.version} did not finish "
                    f"within {_KAFKA_FORMAT_TIMEOUT_S:.0f} s"
                )
            ) from None
        except OSError as exc:
            raise KafkaBackendError(f"`{self._java}` could not start: {exc}") from None
        if result.returncode != 0:
            output = "\n".join(result.stdout.splitlines()[-_KAFKA_LOG_TAIL_LINES:])
            raise KafkaBackendError(
                self._failure(
                    f"formatting the log dir of Apache Kafka {self.version} failed "
                    f"(exit code {result.returncode}):\n{output}"
                )
            )

    def _launch_and_wait(self) -> None:
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        # Closed in stop(): the JVM writes to it for the whole session.
        self._output = self._output_file.open("ab")
        command = self._java_command("kafka.Kafka", str(self._properties))
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=self._output,
                stderr=subprocess.STDOUT,
                cwd=self._work_dir,
                # Its own group and session: a Ctrl-C at the terminal goes to the test run
                # only, which then stops the broker in order (stop()).
                start_new_session=True,
                preexec_fn=_dies_with_this_process(),
            )
        except OSError as exc:
            self._output.close()
            raise KafkaBackendError(f"`{self._java}` could not start: {exc}") from None
        self.pid = self._process.pid
        # Should the interpreter exit without leaving the context (e.g. os._exit is the only
        # thing that skips this), the broker still goes.
        atexit.register(self._kill)
        admin = _admin(self.bootstrap_servers, self.admin_client)
        process = self._process

        def serving_metadata() -> bool:
            if process.poll() is not None:
                if _bind_failed(self.log_file, log_start):
                    self._close_output()
                    raise _PortTakenError
                raise KafkaBackendError(
                    self._failure(f"Apache Kafka {self.version} exited during startup")
                )
            try:
                return bool(admin.list_topics(timeout=1).brokers)
            except KafkaException:
                return False

        try:
            wait_until(
                serving_metadata,
                timeout=_KAFKA_START_TIMEOUT_S,
                interval=0.2,
                message=(
                    f"Apache Kafka {self.version} at {self.bootstrap_servers} did not answer "
                    "metadata requests"
                ),
            )
        except TimeoutError as exc:
            # Stop it first, so that the log quoted in the error is complete.
            self.stop()
            raise KafkaBackendError(self._failure(str(exc))) from None

    # ---- while it runs ---------------------------------------------------------------------

    def exit_report(self) -> str | None:
        """None while the JVM runs; once it has exited, its exit code and last log lines."""
        if self._process is None or self._process.poll() is None:
            return None
        return self._failure(f"the Apache Kafka {self.version} broker exited")

    def _failure(self, headline: str) -> str:
        lines = [headline]
        if self._process is not None:
            lines.append(f"pid {self._process.pid}, {_describe_exit(self._process.poll())}")
        lines.append(
            f"command: {self._java} {' '.join(_KAFKA_JVM_OPTIONS)} -cp <{self._jar_count} jars "
            f"from {self._jar_dir}> kafka.Kafka {self._properties}"
        )
        for title, path in (("broker log", self.log_file), ("JVM output", self._output_file)):
            tail = _tail(path, _KAFKA_LOG_TAIL_LINES)
            lines.append(f"--- {title} ({path}), last {len(tail)} lines ---")
            lines.extend(tail or ["(empty)"])
        return "\n".join(lines)

    # ---- stopping --------------------------------------------------------------------------

    def stop(self) -> None:
        """SIGTERM, wait with a deadline, then SIGKILL; also on a Ctrl-C during the wait."""
        process = self._process
        if process is not None and process.poll() is None:
            try:
                _signal_group(process, signal.SIGTERM)
                try:
                    process.wait(timeout=_KAFKA_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    _signal_group(process, signal.SIGKILL)
                    process.wait(timeout=_KAFKA_STOP_TIMEOUT_S)
            except BaseException:
                # A second Ctrl-C while the broker shuts down: do not leave it behind.
                self._kill()
                raise
        atexit.unregister(self._kill)
        self._close_output()

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            _signal_group(process, signal.SIGKILL)
            # Also runs at interpreter exit and under an interrupt: it must not raise there.
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_KAFKA_STOP_TIMEOUT_S)

    def _close_output(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None


def _kafka_cluster_id() -> str:
    """A cluster id in Kafka's own form: 16 random bytes, URL-safe base64 without padding."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # Kafka never makes one that starts with "-": a command line would read it as an option.
        if not cluster_id.startswith("-"):
            return cluster_id


def _free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now, all different (each socket is held until all are)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _bind_failed(log_file: Path, start: int) -> bool:
    try:
        with log_file.open("rb") as log:
            log.seek(start)
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return False
    return "Address already in use" in text


def _tail(path: Path, count: int) -> list[str]:
    """The last ``count`` lines of a file that may be large; [] if it cannot be read."""
    window = 256 * 1024
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - window))
            data = handle.read()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    if size > window:
        lines = lines[1:]  # the first one is cut
    return lines[-count:]


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit code {returncode}"


def _signal_group(process: subprocess.Popen[Any], signum: signal.Signals) -> None:
    # The child leads its own process group (start_new_session), so its group id is its pid;
    # it is not reaped yet (the caller saw poll() return None), so that id is still its own.
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def _dies_with_this_process() -> Callable[[], None] | None:
    """A ``preexec_fn`` by which the kernel SIGKILLs the child when this process dies.

    This covers what no finalizer can: the test run killed with SIGKILL, or the OOM killer.
    Linux only (prctl); elsewhere None, and only the finalizers stop the broker.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        # Looked up now: between fork and exec the child should do as little as possible.
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    kill = int(signal.SIGKILL)

    def set_parent_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, kill)
        # If the parent died between fork and prctl, no signal will ever come.
        if os.getppid() != parent:
            os._exit(1)

    return set_parent_death_signal


# --------------------------------------------------------------------------------------------
# noida: the noida-db binary from PyPI
# --------------------------------------------------------------------------------------------


@contextmanager
def _noida_backend(env: Mapping[str, str]) -> Iterator[KafkaBackend]:
    del env  # the noida-db broker has no settings
    if importlib.util.find_spec(_NOIDA_PACKAGE) is None:
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=noida needs the PyPI package {_NOIDA_DISTRIBUTION}==0.2.3"
        )
    # The bundled binary itself, not the `noida-db` console script: the script is a Python
    # wrapper, and signalling it would leave the real broker running.
    resource = importlib.resources.files(_NOIDA_PACKAGE) / "noida-db"
    # A fresh directory per session: noida-db rewrites its whole state file on every change,
    # so leftovers from earlier runs would both slow it down and leak data between sessions.
    data_dir = tempfile.mkdtemp(prefix="kafka-test-noida-db-")
    try:
        with importlib.resources.as_file(resource) as binary:
            broker = _NoidaProcess(binary, Path(data_dir))
            try:
                address = broker.wait_for_address(_NOIDA_START_TIMEOUT_S)
                yield KafkaBackend(
                    "noida",
                    address,
                    f"{_noida_version()} at {address}, data dir {data_dir}, pid {broker.pid}",
                    pid=broker.pid,
                    exit_report=broker.exit_report,
                )
            finally:
                broker.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


class _NoidaProcess:
    """A noida-db child process whose output can never fill up and block it.

    stdout is drained on a daemon thread for the whole life of the process (the address line
    comes first, but the broker may print more later). stderr goes to an anonymous file: it
    is read only if startup fails.
    """

    def __init__(self, binary: Path, data_dir: Path) -> None:
        if not os.access(binary, os.X_OK):
            raise KafkaBackendError(f"the noida-db binary at {binary} is not executable")
        self._command = [
            str(binary),
            "start",
            "--data-dir",
            str(data_dir),
            "--only",
            "kafka",
            # Port 0: the OS picks a free port, so parallel sessions never collide.
            "--kafka-port",
            "0",
        ]
        # Closed in stop(): the file must outlive this method, so no `with` block.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                self._command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                # As for the apache broker: Ctrl-C reaches the test run, which stops this in
                # order, and the kernel kills it if the test run dies first.
                start_new_session=True,
                preexec_fn=_dies_with_this_process(),
            )
        except BaseException:
            self._stderr.close()
            raise
        self.pid = self._process.pid
        self._lock = threading.Lock()
        # Bounded, because a broker that logs a lot over a long session must not grow memory.
        self._stdout_lines: deque[str] = deque(maxlen=200)
        self._address: str | None = None
        self._reader = threading.Thread(
            target=self._read_stdout, name=f"noida-db-{self.pid}-stdout", daemon=True
        )
        self._reader.start()

    def _read_stdout(self) -> None:
        stream = self._process.stdout
        if stream is None:  # not reachable: Popen was given stdout=PIPE
            return
        for line in stream:
            with self._lock:
                self._stdout_lines.append(line.rstrip("\n"))
                if self._address is None:
                    match = _NOIDA_KAFKA_LINE.match(line)
                    if match:
                        self._address = match.group("address")

    def wait_for_address(self, timeout: float) -> str:
        """The Kafka address the broker announced; raises if it exits or stays silent."""

        def address_or_exit() -> str | None:
            with self._lock:
                if self._address is not None:
                    return self._address
            if self._process.poll() is not None:
                raise KafkaBackendError(self._failure("noida-db exited during startup"))
            return None

        try:
            return wait_until(
                address_or_exit,
                timeout=timeout,
                interval=0.02,
                message="noida-db did not print its Kafka address",
            )
        except TimeoutError as exc:
            # Terminate it first, so that the output quoted in the error is complete.
            self._terminate()
            raise KafkaBackendError(self._failure(str(exc))) from exc

    def exit_report(self) -> str | None:
        """None while noida-db runs; once it has exited, its exit code and output."""
        if self._process.poll() is None:
            return None
        return self._failure("the noida-db broker exited")

    def stop(self) -> None:
        """Stop the broker and release its pipe and stderr file."""
        self._terminate()
        if self._process.stdout is not None and not self._reader.is_alive():
            self._process.stdout.close()
        self._stderr.close()

    def _terminate(self) -> None:
        """SIGTERM (noida-db saves and exits well under a second), SIGKILL if it hangs."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=_NOIDA_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        # The pipe reaches EOF once the broker is gone; the reader must finish before the
        # pipe is closed under it.
        self._reader.join(timeout=5.0)

    def _failure(self, headline: str) -> str:
        # Give the reader a moment to collect what the broker printed just before exiting.
        self._reader.join(timeout=1.0)
        with self._lock:
            stdout = "\n".join(self._stdout_lines)
        stderr = ""
        if not self._stderr.closed:
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", errors="replace").splitlines()
            stderr = "\n".join(line for line in lines if not _HARMLESS_STDERR.search(line))
        command = " ".join(self._command)
        return (
            f"{headline}\n"
            f"command: {command}\n"
            f"exit code: {self._process.poll()}\n"
            f"--- stdout ---\n{stdout or '(empty)'}\n"
            f"--- stderr ---\n{stderr or '(empty)'}"
        )


def _noida_version() -> str:
    try:
        return f"{_NOIDA_DISTRIBUTION} {importlib.metadata.version(_NOIDA_DISTRIBUTION)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{_NOIDA_DISTRIBUTION} (not installed)"


def _print_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _wait_for_broker(backend: KafkaBackend) -> None:
    # A container's port or an external cluster can accept connections before the broker
    # serves metadata; tests should start only once it does.
    admin = _admin(backend.bootstrap_servers)

    def metadata_served() -> bool:
        try:
            return bool(admin.list_topics(timeout=2).brokers)
        except KafkaException:
            return False

    try:
        wait_until(
            metadata_served,
            timeout=_BROKER_READY_TIMEOUT_S,
            interval=0.2,
            message=f"Kafka backend {backend.description} did not answer metadata requests",
        )
    except TimeoutError as exc:
        raise KafkaBackendError(str(exc)) from exc


# --------------------------------------------------------------------------------------------
# Client helpers
# --------------------------------------------------------------------------------------------


# The helpers below take ``client``: librdkafka settings besides bootstrap.servers, such as a
# secured broker's admin login (SecuredKafka.admin_client); none for a plaintext broker.
Client = Mapping[str, str] | None


def _client_config(bootstrap: str, client: Client = None) -> dict[str, Any]:
    return {**(client or {}), "bootstrap.servers": bootstrap, "logger": _LIBRDKAFKA_LOGGER}


def _admin(bootstrap: str, client: Client = None) -> AdminClient:
    # AdminClient's typed config only admits scalars; the logger goes in as a keyword.
    return AdminClient(
        {**(client or {}), "bootstrap.servers": bootstrap}, logger=_LIBRDKAFKA_LOGGER
    )


_TOPIC_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def unique_topic(prefix: str) -> str:
    """A topic name unique to this call, built only from characters Kafka allows."""
    safe_prefix = _TOPIC_UNSAFE.sub("-", prefix).strip("-") or "topic"
    # Kafka's limit is 249 characters; leave room for the suffix.
    return f"{safe_prefix[:200]}-{uuid.uuid4().hex[:10]}"


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    *,
    config: Mapping[str, str] | None = None,
    replication_factor: int = 1,
    timeout: float = 30.0,
    client: Client = None,
) -> None:
    """Create a topic and wait until its metadata shows every partition with a leader.

    ``retention.ms`` is always ``-1``: noida-db deletes records whose CreateTime is older than
    the retention (7 days by default) within seconds, and tests deliberately use old
    timestamps. Real Kafka accepts the same setting.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    topic_config = dict(config or {})
    if topic_config.get("retention.ms", "-1") != "-1":
        raise ValueError(
            "test topics need retention.ms=-1 (noida-db eagerly deletes old records); "
            f"got retention.ms={topic_config['retention.ms']!r}"
        )
    topic_config["retention.ms"] = "-1"

    admin = _admin(bootstrap, client)
    futures = admin.create_topics(
        [
            NewTopic(
                name,
                num_partitions=partitions,
                replication_factor=replication_factor,
                config=topic_config,
            )
        ],
        request_timeout=timeout,
    )
    futures[name].result(timeout=timeout)

    def all_partitions_ready() -> bool:
        try:
            topic = admin.list_topics(topic=name, timeout=5).topics.get(name)
        except KafkaException:
            return False
        return (
            topic is not None
            and topic.error is None
            and sorted(topic.partitions) == list(range(partitions))
            and all(p.error is None and p.leader >= 0 for p in topic.partitions.values())
        )

    wait_until(
        all_partitions_ready,
        timeout=timeout,
        interval=0.05,
        message=f"topic {name!r} did not show {partitions} partitions with leaders",
    )


def topic_config(
    bootstrap: str, name: str, *, timeout: float = 30.0, client: Client = None
) -> dict[str, str]:
    """The topic's effective configuration as the broker reports it (DescribeConfigs)."""
    admin = _admin(bootstrap, client)
    futures = admin.describe_configs([ConfigResource("topic", name)], request_timeout=timeout)
    entries: dict[str, Any] = next(iter(futures.values())).result(timeout=timeout)
    return {key: entry.value for key, entry in entries.items() if entry.value is not None}


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[Record],
    *,
    timeout: float = 30.0,
    client: Client = None,
) -> None:
    """Produce ``records`` with their explicit partitions and CreateTimes, and flush.

    Raises:
        KafkaBackendError: any record was not acknowledged by the broker.
    """
    producer = Producer(_client_config(bootstrap, client))
    failures: list[str] = []
    delivered = 0

    def on_delivery(error: KafkaError | None, message: Message[Any, Any]) -> None:
        nonlocal delivered
        if error is not None:
            failures.append(f"partition {message.partition()} key {message.key()!r}: {error}")
        else:
            delivered += 1

    sent = 0
    deadline = time.monotonic() + timeout
    for record in records:
        while True:
            try:
                producer.produce(
                    topic,
                    value=record.value,
                    key=record.key,
                    partition=record.partition,
                    timestamp=record.timestamp_ms,
                    headers=list(record.headers) if record.headers is not None else None,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                # The local queue is full; serving delivery reports frees space.
                if time.monotonic() >= deadline:
                    raise
                producer.poll(0.1)
        sent += 1
    remaining = producer.flush(max(0.0, deadline - time.monotonic()))
    if remaining or failures or delivered != sent:
        details = "; ".join(failures[:10])
        raise KafkaBackendError(
            f"producing to {topic!r}: {delivered} of {sent} records acknowledged, "
            f"{remaining} still queued, {len(failures)} failed: {details}"
        )


def consume_all(
    bootstrap: str,
    topic: str,
    expected_count: int,
    timeout: float = 30.0,
    client: Client = None,
) -> list[ConsumedRecord]:
    """Read ``topic`` from offset 0 of every partition until ``expected_count`` records arrive.

    Partitions are assigned directly, so no consumer group joins and nothing is committed.
    Records come back sorted by (partition, offset).

    Raises:
        TimeoutError: fewer records arrived before the deadline; the message lists them.
    """
    consumer = Consumer(
        {
            **_client_config(bootstrap, client),
            # Required by the client even with manual assignment; unique so that nothing
            # ever shares or inherits committed offsets.
            "group.id": f"test-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
        }
    )
    arrived: list[ConsumedRecord] = []
    try:
        metadata = consumer.list_topics(topic=topic, timeout=timeout)
        topic_metadata = metadata.topics.get(topic)
        if topic_metadata is None or topic_metadata.error or not topic_metadata.partitions:
            raise KafkaBackendError(f"topic {topic!r} has no partitions: {topic_metadata!r}")
        consumer.assign(
            [TopicPartition(topic, partition, 0) for partition in sorted(topic_metadata.partitions)]
        )

        def enough_arrived() -> bool:
            for message in consumer.consume(num_messages=1000, timeout=0.2):
                error = message.error()
                if error is not None:
                    raise KafkaBackendError(f"consuming {topic!r}: {error}")
                arrived.append(_consumed_record(message))
            return len(arrived) >= expected_count

        try:
            # consume() itself blocks for up to 0.2 s, so no extra pause between polls.
            wait_until(
                enough_arrived,
                timeout=timeout,
                interval=0.001,
                message=f"expected {expected_count} records from {topic!r}",
            )
        except TimeoutError as exc:
            shown = "\n".join(map(repr, sorted(arrived, key=_position)[:50]))
            raise TimeoutError(f"{exc}; {len(arrived)} arrived:\n{shown}") from exc
    finally:
        consumer.close()
    return sorted(arrived, key=_position)


def _position(record: ConsumedRecord) -> tuple[int, int]:
    return record.partition, record.offset


def _consumed_record(message: Message[Any, Any]) -> ConsumedRecord:
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    if topic is None or partition is None or offset is None:
        raise KafkaBackendError(f"message without a position: {message!r}")
    timestamp_type, timestamp_ms = message.timestamp()
    return ConsumedRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        key=message.key(),
        value=message.value(),
        timestamp_ms=timestamp_ms,
        timestamp_type=timestamp_type,
    )
