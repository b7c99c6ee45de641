"""The ``testcontainers`` backend: Kafka in a container, published on 127.0.0.1.

The official ``apache/kafka`` image (the default) is driven the way testcontainers-java's
``org.testcontainers.kafka.KafkaContainer`` drives it: one KRaft node configured through
``KAFKA_*`` variables, a published port, and a start script written once the port is known,
so the broker advertises the mapped port, then the image's own ``/etc/kafka/docker/run``.
Confluent's ``confluentinc/cp-kafka`` images (tag 7.0.0 or later) go through
testcontainers-python's ``KafkaContainer`` in KRaft mode, which drives Confluent's scripts.
Which images, and pulling them: ``image``.

Every port is published on 127.0.0.1 only. On podman, whose Docker API would put a container
that names no network on a bridge, the container gets user-mode networking (``slirp4netns``);
``KAFKA_CONTAINER_NETWORK_MODE`` overrides the choice for either engine.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

from pyspark_kafka_upgrade.testing._jvm import KAFKA_JVM_VARIABLE
from pyspark_kafka_upgrade.testing._kafka.backend import (
    BACKEND_ENV_VAR,
    KafkaBackend,
    KafkaBackendError,
    KafkaImageUnavailableError,
    Progress,
)
from pyspark_kafka_upgrade.testing._kafka.broker_settings import (
    ONE_NODE_TEST_SETTINGS,
    as_image_environment,
    cluster_id,
)
from pyspark_kafka_upgrade.testing._kafka.engine import (
    ENGINE_TIMEOUT_S,
    docker_client,
    docker_errors,
    docker_is_available,
    engine_name,
)
from pyspark_kafka_upgrade.testing._kafka.image import (
    ImageUnavailableError,
    KafkaImage,
    KafkaImageError,
    container_image,
    origin,
    provide_image,
)

NETWORK_MODE_ENV_VAR = "KAFKA_CONTAINER_NETWORK_MODE"
# Measured: Kafka 4.4 in a container starts in about 5 s on 2 idle cores, 18-24 s on a loaded
# machine, several times that with Spark beside it; testcontainers' own 30 s is too tight.
START_TIMEOUT_S = 180.0
_START_SCRIPT = "/tmp/testcontainers_start.sh"
_STARTED_LINE = "Kafka Server started"
_LOG_TAIL_LINES = 40
_PODMAN_NETWORK_MODE = "slirp4netns"


class KafkaContainerError(KafkaBackendError):
    """The Kafka container could not be run: the engine failed, or the broker did not start."""


@contextmanager
def testcontainers_backend(env: Mapping[str, str], progress: Progress) -> Iterator[KafkaBackend]:
    """The backend's broker, in a container removed on exit.

    Raises:
        KafkaImageUnavailableError: the engine cannot provide the image.
        KafkaBackendError: anything else went wrong, in one line naming the backend.
    """
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
        with running_kafka(image, env, progress) as backend:
            yield backend
    except ImageUnavailableError as exc:
        failure = KafkaImageUnavailableError(f"{BACKEND_ENV_VAR}=testcontainers: {exc}")
    except (KafkaImageError, KafkaContainerError) as exc:
        failure = KafkaBackendError(f"{BACKEND_ENV_VAR}=testcontainers: {exc}")
    if failure is not None:
        raise failure


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


@contextmanager
def running_kafka(
    image: KafkaImage, env: Mapping[str, str], progress: Progress
) -> Iterator[KafkaBackend]:
    """A Kafka container of ``image``, started and then removed whatever happens.

    Raises:
        ImageUnavailableError: the engine cannot provide the image.
        KafkaImageError: the engine failed while providing it.
        KafkaContainerError: anything else went wrong (the engine failed, the broker did
            not start); one line, with the container's last log lines where it ran.
    """
    built = provide_image(image, progress)
    try:
        client = docker_client(ENGINE_TIMEOUT_S * 10)
        try:
            mode = network_mode(engine_name(client), env)
        finally:
            client.close()
        container = _created(image, mode, env)
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
        yield KafkaBackend(
            "testcontainers",
            bootstrap,
            f"{image.name}{origin(built)}: container {inner.short_id}{network} at {bootstrap}",
            exit_report=lambda: _exit_report(inner, image),
        )
    finally:
        _remove(container)


def _created(image: KafkaImage, mode: str | None, env: Mapping[str, str]) -> Any:
    """The container, started; the cp-kafka class also waits for its broker to start."""
    container = _apache_container(image) if image.kind == "apache" else _confluent_container(image)
    if env.get(KAFKA_JVM_VARIABLE):
        # In place of the image's default (its G1 tuning), as its scripts read it.
        container.with_env(KAFKA_JVM_VARIABLE, env[KAFKA_JVM_VARIABLE])
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
        "CLUSTER_ID": cluster_id(),
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
    try:
        inner.reload()
    except docker_errors().NotFound:
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
