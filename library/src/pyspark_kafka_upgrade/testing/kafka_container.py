"""Kafka in a container, for the ``testcontainers`` backend.

The official ``apache/kafka`` image (the default) is driven the way testcontainers-java's
``org.testcontainers.kafka.KafkaContainer`` drives it: one KRaft node configured through
``KAFKA_*`` variables, a published port, and a start script written once the port is known,
so the broker advertises the mapped port, then the image's own ``/etc/kafka/docker/run``.
Confluent's ``confluentinc/cp-kafka`` images (tag 7.0.0 or later) go through
testcontainers-python's ``KafkaContainer`` in KRaft mode, which drives Confluent's scripts.

Every port is published on 127.0.0.1 only. On podman, whose Docker API would put a container
that names no network on a bridge, the container gets user-mode networking (``slirp4netns``);
``KAFKA_CONTAINER_NETWORK_MODE`` overrides the choice for either engine.
"""

from __future__ import annotations

import base64
import importlib
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Literal

from pyspark_kafka_upgrade.testing.broker_settings import (
    ONE_NODE_TEST_SETTINGS,
    as_image_environment,
)

NETWORK_MODE_ENV_VAR = "KAFKA_CONTAINER_NETWORK_MODE"
APACHE_REPOSITORY = "apache/kafka"
CONFLUENT_REPOSITORY = "confluentinc/cp-kafka"
# Measured: Kafka 4.4 in a container starts in about 5 s on 2 idle cores, 18-24 s on a loaded
# machine, several times that with Spark beside it; testcontainers' own 30 s is too tight.
START_TIMEOUT_S = 180.0
_PULL_TIMEOUT_S = 900
_ENGINE_TIMEOUT_S = 3
_KAFKA_PORT = 9092
_CONFLUENT_PORT = 9093
_START_SCRIPT = "/tmp/testcontainers_start.sh"
_STARTED_LINE = "Kafka Server started"
_LOG_TAIL_LINES = 40
# apache/kafka images exist from 3.7.0, the first release with the Docker wrapper.
_APACHE_TAG = re.compile(r"(?P<major>\d+)\.(?P<minor>\d+)\.\d+(-rc\d+)?")
_CONFLUENT_TAG = re.compile(r"(?P<major>\d+)\.\d+\.\d+.*")
_SUPPORTED = (
    f"{APACHE_REPOSITORY}:<3.7.0 or later> (the default) or {CONFLUENT_REPOSITORY}:<7.0.0 or later>"
)
_PODMAN_NETWORK_MODE = "slirp4netns"

Progress = Callable[[str], None]


class KafkaContainerError(RuntimeError):
    """A Kafka container could not be had: a bad image name, no engine, or no broker."""


class ImageUnavailableError(KafkaContainerError):
    """The engine answers but cannot provide the image: auto falls back, an explicit choice
    stops the run."""


@dataclass(frozen=True)
class KafkaImage:
    """An image name the backend can run, and which way it is driven."""

    name: str
    kind: Literal["apache", "confluent"]
    tag: str

    @property
    def port(self) -> int:
        """The broker's port inside the container, which is published."""
        return _KAFKA_PORT if self.kind == "apache" else _CONFLUENT_PORT

    @property
    def kafka_version(self) -> str | None:
        """The Apache Kafka version, where the tag says it (apache/kafka tags do)."""
        return self.tag if self.kind == "apache" else None


@dataclass(frozen=True)
class RunningKafka:
    """A started Kafka container."""

    bootstrap_servers: str
    description: str
    # None while the container runs; once it has exited, its exit code and last log lines.
    exit_report: Callable[[], str | None]


def parse_image(name: str) -> KafkaImage:
    """``name`` as a runnable image (any registry prefix), or one line naming those that work.

    Raises:
        KafkaContainerError: not an apache/kafka or cp-kafka image this backend can drive.
    """
    repository, _, tag = name.rpartition(":")
    if not repository or "/" in tag:
        repository, tag = name, "latest"
    if repository == APACHE_REPOSITORY or repository.endswith(f"/{APACHE_REPOSITORY}"):
        match = _APACHE_TAG.fullmatch(tag)
        if match and (int(match["major"]), int(match["minor"])) >= (3, 7):
            return KafkaImage(name, "apache", tag)
    elif repository == CONFLUENT_REPOSITORY or repository.endswith(f"/{CONFLUENT_REPOSITORY}"):
        match = _CONFLUENT_TAG.fullmatch(tag)
        if match and int(match["major"]) >= 7:
            return KafkaImage(name, "confluent", tag)
    raise KafkaContainerError(
        f"KAFKA_IMAGE={name} is not an image the testcontainers backend can run: use {_SUPPORTED}"
    )


def _docker_client(timeout: int) -> Any:
    # Imported by name so that the untyped docker package needs no type stubs.
    docker: Any = importlib.import_module("docker")
    return docker.from_env(timeout=timeout)


def engine_name(client: Any) -> str:
    """``Podman`` or ``Docker``, as the engine's version report names itself."""
    components = client.version().get("Components") or []
    names = " ".join(str(component.get("Name", "")) for component in components)
    return "Podman" if "podman" in names.lower() else "Docker"


def network_mode(engine: str, env: Mapping[str, str]) -> str | None:
    """The container's network mode: the setting if given (empty: the engine's default),
    else user-mode networking on podman and the engine's default on Docker.

    Raises:
        KafkaContainerError: host networking, which would publish nothing and put the
            broker on every interface of the host.
    """
    if NETWORK_MODE_ENV_VAR in env:
        mode = env[NETWORK_MODE_ENV_VAR].strip() or None
        if mode == "host":
            raise KafkaContainerError(
                f"{NETWORK_MODE_ENV_VAR}=host would put the broker on every interface of "
                f"the host: use {_PODMAN_NETWORK_MODE} (podman) or leave it empty (the "
                "engine's default)"
            )
        return mode
    return _PODMAN_NETWORK_MODE if engine == "Podman" else None


def provide_image(image: KafkaImage, progress: Progress) -> str:
    """Make sure the engine has ``image``, pulling it if needed; its description label.

    Raises:
        ImageUnavailableError: the pull failed or took longer than 15 minutes; the message
            carries the engine's own error, which the Docker SDK drops (podman reports it
            inside a successful HTTP reply).
        KafkaContainerError: the engine failed otherwise.
    """
    docker: Any = importlib.import_module("docker")
    try:
        client = _docker_client(_ENGINE_TIMEOUT_S * 10)
    except Exception as exc:
        raise KafkaContainerError(f"no container engine answers Docker's API: {exc}") from None
    try:
        try:
            return _description(client.images.get(image.name))
        except docker.errors.ImageNotFound:
            pass
        progress(f"kafka backend: pulling {image.name} (not on this machine yet)")
        error = _pull(client, image.name)
        try:
            return _description(client.images.get(image.name))
        except docker.errors.ImageNotFound:
            raise ImageUnavailableError(
                f"the container engine answers but cannot provide {image.name}: "
                f"{error or 'the pull ended without the image'}"
            ) from None
    except KafkaContainerError:
        raise
    except Exception as exc:
        raise KafkaContainerError(f"the container engine failed on {image.name}: {exc}") from None
    finally:
        client.close()


def _pull(client: Any, name: str) -> str | None:
    """Pull ``name``; the engine's error, if it reported one, within the deadline."""
    docker: Any = importlib.import_module("docker")
    repository, _, tag = name.rpartition(":")
    deadline = time.monotonic() + _PULL_TIMEOUT_S
    error = None
    try:
        for event in client.api.pull(repository, tag, stream=True, decode=True):
            if isinstance(event, dict) and event.get("error"):
                error = str(event["error"]).strip()
            if time.monotonic() > deadline:
                return f"the pull did not finish within {_PULL_TIMEOUT_S} s"
    except docker.errors.APIError as exc:
        error = str(exc.explanation or exc).strip()
    except Exception as exc:  # the connection broke or timed out mid-pull
        error = f"the pull failed: {exc}"
    return error


def _description(found: Any) -> str:
    labels = found.labels or {}
    return str(labels.get("org.opencontainers.image.description", "")).strip()


def _origin(description: str) -> str:
    # A local build's label says "Apache Kafka <version>, built ...": the tag says the first.
    if description.startswith("Apache Kafka "):
        description = description.split(", ", 1)[-1]
    return f", {description}" if description else ""


def describe_image(image: KafkaImage) -> str:
    """What the header says: the image, how it was built if it says, the engine; no pull."""
    kafka = f"Apache Kafka {image.kafka_version}" if image.kafka_version else "Confluent Kafka"
    try:
        client = _docker_client(_ENGINE_TIMEOUT_S)
    except Exception:
        return f"{image.name}: {kafka}, started on first use"
    try:
        engine = engine_name(client)
        try:
            built = _description(client.images.get(image.name))
        except Exception:
            built = "pulled on first use"
        return f"{image.name}{_origin(built)}: {kafka} via {engine}, started on first use"
    except Exception:
        return f"{image.name}: {kafka}, started on first use"
    finally:
        client.close()


@contextmanager
def running_kafka(
    image: KafkaImage, env: Mapping[str, str], progress: Progress
) -> Iterator[RunningKafka]:
    """A Kafka container of ``image``, started and then removed whatever happens.

    Raises:
        ImageUnavailableError: the engine cannot provide the image.
        KafkaContainerError: anything else went wrong (the engine failed, the broker did
            not start); one line, with the container's last log lines where it ran.
    """
    built = provide_image(image, progress)
    try:
        client = _docker_client(_ENGINE_TIMEOUT_S * 10)
        try:
            mode = network_mode(engine_name(client), env)
        finally:
            client.close()
        container = _created(image, mode)
    except KafkaContainerError:
        raise
    except Exception as exc:
        raise KafkaContainerError(
            f"the container engine failed to run {image.name}: {exc}"
        ) from None
    try:
        try:
            inner = container.get_wrapped_container()
            port = container.get_exposed_port(image.port)
            bootstrap = f"{container.get_container_host_ip()}:{port}"
            if image.kind == "apache":
                _write_start_script(inner, bootstrap)
                _wait_for_start(inner, image)
        except KafkaContainerError:
            raise
        except Exception as exc:
            logs = _log_tail(container.get_wrapped_container())
            raise KafkaContainerError(
                f"the Kafka container of {image.name} did not start: {exc}{logs}"
            ) from None
        network = f", network {mode}" if mode else ""
        yield RunningKafka(
            bootstrap,
            f"{image.name}{_origin(built)}: container {inner.short_id}{network} at {bootstrap}",
            lambda: _exit_report(inner, image),
        )
    finally:
        _remove(container)


def _created(image: KafkaImage, mode: str | None) -> Any:
    """The container, started; the cp-kafka class also waits for its broker to start."""
    container = _apache_container(image) if image.kind == "apache" else _confluent_container(image)
    # A random host port on 127.0.0.1 only; testcontainers' own setters take no address.
    container.ports[str(image.port)] = ("127.0.0.1", None)
    if mode:
        container.with_kwargs(network_mode=mode)
    try:
        if image.kind == "apache":
            container.start()
        else:
            container.start(timeout=int(START_TIMEOUT_S))
    except BaseException as exc:
        # start() can fail after the container exists; it must still be removed.
        logs = ""
        if getattr(container, "_container", None) is not None:
            logs = _log_tail(container.get_wrapped_container())
        _remove(container)
        if isinstance(exc, Exception):
            raise KafkaContainerError(
                f"the Kafka container of {image.name} did not start: {exc}{logs}"
            ) from None
        raise
    return container


def _remove(container: Any) -> None:
    # Already gone (it died, or someone removed it): nothing left to do, and the error that
    # brought us here is the one worth reporting.
    with suppress(Exception):
        container.stop()


def _apache_container(image: KafkaImage) -> Any:
    from testcontainers.core.container import DockerContainer

    environment = {
        # A cluster id per container: nothing carries over between runs.
        "CLUSTER_ID": _cluster_id(),
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": f"PLAINTEXT://:{image.port},BROKER://:9093,CONTROLLER://:9094",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
            "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        ),
        "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094",
        "KAFKA_LOG_DIRS": "/tmp/kraft-combined-logs",
        # The broker shares the machine with Spark; test topics hold kilobytes.
        "KAFKA_HEAP_OPTS": "-Xms64m -Xmx512m",
        **as_image_environment(ONE_NODE_TEST_SETTINGS),
    }
    container = DockerContainer(image.name)
    for key, value in environment.items():
        container.with_env(key, value)
    # The broker must advertise the host's port, known only once the container runs: it
    # waits for the start script this process writes then.
    return container.with_command(
        ["sh", "-c", f"while [ ! -f {_START_SCRIPT} ]; do sleep 0.1; done; exec {_START_SCRIPT}"]
    )


def _confluent_container(image: KafkaImage) -> Any:
    kafka: Any = importlib.import_module("testcontainers.community.kafka")
    # Its own port (9093): the class puts its inter-broker listener on 9092.
    container = kafka.KafkaContainer(image.name, port=image.port)
    try:
        # KRaft: cp-kafka 8.x has no ZooKeeper.
        container.with_kraft()
    except ValueError as exc:
        raise KafkaContainerError(
            f"KAFKA_IMAGE={image.name} cannot run in KRaft mode: {exc}"
        ) from None
    # Confluent's scripts read KAFKA_* variables by the same rule as the official image's.
    for key, value in as_image_environment(ONE_NODE_TEST_SETTINGS).items():
        container.with_env(key, value)
    return container


def _cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _write_start_script(inner: Any, bootstrap: str) -> None:
    script = (
        "#!/bin/sh\n"
        f"export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://{bootstrap},BROKER://localhost:9093\n"
        "exec /etc/kafka/docker/run\n"
    )
    # Written aside and renamed, so the waiting loop never runs half a script.
    result = inner.exec_run(
        [
            "sh",
            "-c",
            f'printf "%s" "$1" > {_START_SCRIPT}.part && chmod 755 {_START_SCRIPT}.part '
            f"&& mv {_START_SCRIPT}.part {_START_SCRIPT}",
            "sh",
            script,
        ]
    )
    if result.exit_code != 0:
        raise KafkaContainerError(
            f"could not write the start script into the Kafka container: "
            f"{result.output.decode(errors='replace').strip()}"
        )


def _wait_for_start(inner: Any, image: KafkaImage) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        inner.reload()
        if inner.status in ("exited", "dead"):
            raise KafkaContainerError(_exit_report(inner, image) or "the Kafka container exited")
        # The whole log: the line can be followed by hundreds more within one poll.
        if _STARTED_LINE in inner.logs().decode(errors="replace"):
            return
        if time.monotonic() > deadline:
            raise KafkaContainerError(
                f"the Kafka container {inner.short_id} ({image.name}) did not log "
                f"{_STARTED_LINE!r} within {START_TIMEOUT_S:.0f} s{_log_tail(inner)}"
            )
        time.sleep(0.5)


def _exit_report(inner: Any, image: KafkaImage) -> str | None:
    docker: Any = importlib.import_module("docker")
    try:
        inner.reload()
    except docker.errors.NotFound:
        return f"the Kafka container {inner.short_id} ({image.name}) was removed"
    except Exception:
        # A slow answer from a loaded engine says nothing about the broker.
        return None
    if inner.status not in ("exited", "dead"):
        return None
    code = inner.attrs.get("State", {}).get("ExitCode")
    return f"the Kafka container {inner.short_id} ({image.name}) exited with code {code}" + (
        _log_tail(inner)
    )


def _log_tail(inner: Any) -> str:
    try:
        text = inner.logs(tail=_LOG_TAIL_LINES).decode(errors="replace").rstrip()
    except Exception:
        return ""
    return f"; its last log lines:\n{text}" if text else ""
