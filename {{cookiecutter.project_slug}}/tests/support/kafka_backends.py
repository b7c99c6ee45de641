"""Kafka brokers for tests, and small confluent-kafka helpers to drive them.

The broker is chosen with the environment variable ``KAFKA_BACKEND``:

``external``
    An already running cluster at ``KAFKA_BOOTSTRAP_SERVERS`` (for example in CI).
``testcontainers``
    A throwaway ``confluentinc/cp-kafka`` container in KRaft mode (image overridable with
    ``KAFKA_IMAGE``). Needs a Docker daemon.
``local``
    The ``noida-db`` broker from PyPI: a single binary that speaks the Kafka wire protocol,
    started as a child process on 127.0.0.1 with a fresh data directory. Needs no Docker.
``auto`` (the default)
    ``external`` if ``KAFKA_BOOTSTRAP_SERVERS`` is set, else ``testcontainers`` if a Docker
    daemon answers, else ``local``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import importlib.util
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

from .waiting import wait_until

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message

BACKEND_ENV_VAR = "KAFKA_BACKEND"
BOOTSTRAP_ENV_VAR = "KAFKA_BOOTSTRAP_SERVERS"
IMAGE_ENV_VAR = "KAFKA_IMAGE"

DEFAULT_KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"
BACKEND_CHOICES = ("auto", "external", "testcontainers", "local")

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

_DOCKER_PROBE_TIMEOUT_S = 3
_BROKER_READY_TIMEOUT_S = 30.0

# librdkafka is chatty (every reconnect, every broker going away at teardown). Routing it into
# a Python logger lets pytest capture it and show it only for failing tests.
_LIBRDKAFKA_LOGGER = logging.getLogger("tests.support.librdkafka")


class KafkaBackendError(RuntimeError):
    """A Kafka test backend was misconfigured or could not be started."""


@dataclass(frozen=True)
class KafkaBackend:
    """A running broker that tests can connect to."""

    name: str
    bootstrap_servers: str
    description: str


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


def resolve_backend_choice(
    env: Mapping[str, str],
    docker_available: Callable[[], bool] = docker_is_available,
) -> str:
    """Name the backend that ``env`` selects: ``external``, ``testcontainers`` or ``local``.

    Apart from calling ``docker_available`` (only for ``auto`` without bootstrap servers) this
    has no side effects, so tests can pass a fake environment and a fake Docker probe.

    Raises:
        KafkaBackendError: ``KAFKA_BACKEND`` is not one of :data:`BACKEND_CHOICES`.
    """
    raw = env.get(BACKEND_ENV_VAR, "")
    choice = raw.strip().lower() or "auto"
    if choice not in BACKEND_CHOICES:
        allowed = ", ".join(BACKEND_CHOICES)
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}={raw!r} is not a Kafka test backend; allowed values: {allowed}"
        )
    if choice != "auto":
        return choice
    if env.get(BOOTSTRAP_ENV_VAR, "").strip():
        return "external"
    if docker_available():
        return "testcontainers"
    return "local"


def describe_backend_choice(name: str, env: Mapping[str, str]) -> str:
    """One line saying what a resolved backend name will mean when the broker is started."""
    if name == "external":
        bootstrap = env.get(BOOTSTRAP_ENV_VAR, "").strip()
        if not bootstrap:
            return f"existing cluster, but {BOOTSTRAP_ENV_VAR} is not set: integration tests fail"
        return f"existing cluster at {BOOTSTRAP_ENV_VAR}={bootstrap}"
    if name == "testcontainers":
        image = env.get(IMAGE_ENV_VAR, "").strip() or DEFAULT_KAFKA_IMAGE
        return f"KafkaContainer {image} in KRaft mode via Docker, started on first use"
    if name == "local":
        return (
            f"{_noida_version()} broker binary from PyPI on 127.0.0.1 with a fresh data dir, "
            "started on first use"
        )
    raise KafkaBackendError(f"unknown Kafka test backend {name!r}")


# --------------------------------------------------------------------------------------------
# Starting a backend
# --------------------------------------------------------------------------------------------


@contextmanager
def start_kafka_backend(choice: str | None = None) -> Iterator[KafkaBackend]:
    """Start (or connect to) the chosen broker, wait until it answers, and stop it on exit.

    ``choice`` overrides ``KAFKA_BACKEND``; ``None`` reads it from the environment.
    """
    env: dict[str, str] = dict(os.environ)
    if choice is not None:
        env[BACKEND_ENV_VAR] = choice
    name = resolve_backend_choice(env)
    starters: dict[str, Callable[[Mapping[str, str]], AbstractContextManager[KafkaBackend]]] = {
        "external": _external_backend,
        "testcontainers": _testcontainers_backend,
        "local": _local_backend,
    }
    with starters[name](env) as backend:
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
def _testcontainers_backend(env: Mapping[str, str]) -> Iterator[KafkaBackend]:
    try:
        from testcontainers.community.kafka import KafkaContainer
    except ImportError as exc:
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=testcontainers needs the 'testcontainers' package: {exc}"
        ) from exc
    image = env.get(IMAGE_ENV_VAR, "").strip() or DEFAULT_KAFKA_IMAGE
    try:
        # The constructor already connects to Docker.
        container = KafkaContainer(image)
    except Exception as exc:
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=testcontainers needs a running Docker daemon: {exc}"
        ) from exc
    # KRaft: no ZooKeeper inside the container, and required for cp-kafka 8.x images. Raises
    # ValueError for image tags below 7.0.0.
    container.with_kraft()
    try:
        # Inside the try: start() can fail after the container exists (e.g. the readiness
        # wait times out), and that container must still be removed.
        container.start()
        bootstrap = container.get_bootstrap_server()
        yield KafkaBackend(
            "testcontainers", bootstrap, f"KafkaContainer {image} (KRaft) at {bootstrap}"
        )
    finally:
        container.stop()


@contextmanager
def _local_backend(env: Mapping[str, str]) -> Iterator[KafkaBackend]:
    del env  # the local broker has no settings
    if importlib.util.find_spec(_NOIDA_PACKAGE) is None:
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=local needs the PyPI package {_NOIDA_DISTRIBUTION}==0.2.3"
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
                    "local",
                    address,
                    f"{_noida_version()} at {address}, data dir {data_dir}, pid {broker.pid}",
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


def _client_config(bootstrap: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "logger": _LIBRDKAFKA_LOGGER}


def _admin(bootstrap: str) -> AdminClient:
    # AdminClient's typed config only admits scalars; the logger goes in as a keyword.
    return AdminClient({"bootstrap.servers": bootstrap}, logger=_LIBRDKAFKA_LOGGER)


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

    admin = _admin(bootstrap)
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


def topic_config(bootstrap: str, name: str, *, timeout: float = 30.0) -> dict[str, str]:
    """The topic's effective configuration as the broker reports it (DescribeConfigs)."""
    admin = _admin(bootstrap)
    futures = admin.describe_configs([ConfigResource("topic", name)], request_timeout=timeout)
    entries: dict[str, Any] = next(iter(futures.values())).result(timeout=timeout)
    return {key: entry.value for key, entry in entries.items() if entry.value is not None}


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[Record],
    *,
    timeout: float = 30.0,
) -> None:
    """Produce ``records`` with their explicit partitions and CreateTimes, and flush.

    Raises:
        KafkaBackendError: any record was not acknowledged by the broker.
    """
    producer = Producer(_client_config(bootstrap))
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
) -> list[ConsumedRecord]:
    """Read ``topic`` from offset 0 of every partition until ``expected_count`` records arrive.

    Partitions are assigned directly, so no consumer group joins and nothing is committed.
    Records come back sorted by (partition, offset).

    Raises:
        TimeoutError: fewer records arrived before the deadline; the message lists them.
    """
    consumer = Consumer(
        {
            **_client_config(bootstrap),
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
