"""The Kafka image of the ``testcontainers`` backend: which names it runs, and having one.

The official ``apache/kafka`` image (3.7.0 or later, the default 4.4.0) or Confluent's
``confluentinc/cp-kafka`` (7.0.0 or later), under any registry prefix; ``KAFKA_IMAGE`` names
another than the default. The engine pulls it on first use.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pyspark_kafka_upgrade.testing._kafka.apache_runtime import DEFAULT_KAFKA_VERSION
from pyspark_kafka_upgrade.testing._kafka.backend import (
    KafkaBackendError,
    Progress,
    print_progress,
)
from pyspark_kafka_upgrade.testing._kafka.engine import (
    ENGINE_TIMEOUT_S,
    docker_client,
    docker_errors,
    engine_name,
)

IMAGE_ENV_VAR = "KAFKA_IMAGE"
APACHE_REPOSITORY = "apache/kafka"
CONFLUENT_REPOSITORY = "confluentinc/cp-kafka"
# The official image of the same release as the apache backend's broker.
DEFAULT_KAFKA_IMAGE = f"{APACHE_REPOSITORY}:{DEFAULT_KAFKA_VERSION}"
_PULL_TIMEOUT_S = 900
_KAFKA_PORT = 9092
_CONFLUENT_PORT = 9093
# apache/kafka images exist from 3.7.0, the first release with the Docker wrapper.
_APACHE_TAG = re.compile(r"(?P<major>\d+)\.(?P<minor>\d+)\.\d+(-rc\d+)?")
_CONFLUENT_TAG = re.compile(r"(?P<major>\d+)\.\d+\.\d+.*")
_SUPPORTED = (
    f"{APACHE_REPOSITORY}:<3.7.0 or later> (the default) or {CONFLUENT_REPOSITORY}:<7.0.0 or later>"
)


class KafkaImageError(KafkaBackendError):
    """Not an image the backend can run, or the engine failed while providing it."""


class ImageUnavailableError(KafkaImageError):
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


def container_image(env: Mapping[str, str]) -> KafkaImage:
    """The testcontainers backend's image: ``KAFKA_IMAGE``, else the official 4.4.0.

    Raises:
        KafkaImageError: not an image this backend can run.
    """
    return parse_image(env.get(IMAGE_ENV_VAR, "").strip() or DEFAULT_KAFKA_IMAGE)


def parse_image(name: str) -> KafkaImage:
    """``name`` as a runnable image (any registry prefix), or one line naming those that work.

    Raises:
        KafkaImageError: not an apache/kafka or cp-kafka image this backend can drive.
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
    raise KafkaImageError(
        f"{IMAGE_ENV_VAR}={name} is not an image the testcontainers backend can run: use "
        f"{_SUPPORTED}"
    )


def image_problem(env: Mapping[str, str], progress: Progress | None = None) -> str | None:
    """None when the engine has, or can pull, the Kafka image, else one line saying why not.

    Raises:
        KafkaImageError: ``KAFKA_IMAGE`` names an image this backend cannot run (a setting
            to fix, not a reason to fall back).
    """
    image = container_image(env)
    try:
        provide_image(image, progress or print_progress)
    except KafkaImageError as exc:
        return str(exc)
    return None


def provide_image(image: KafkaImage, progress: Progress) -> str:
    """Make sure the engine has ``image``, pulling it if needed; its description label.

    Raises:
        ImageUnavailableError: the pull failed or took longer than 15 minutes; the message
            carries the engine's own error, which the Docker SDK drops (podman reports it
            inside a successful HTTP reply).
        KafkaImageError: the engine failed otherwise.
    """
    try:
        client = docker_client(ENGINE_TIMEOUT_S * 10)
    except Exception as exc:
        raise KafkaImageError(f"no container engine answers Docker's API: {exc}") from None
    not_found = docker_errors().ImageNotFound
    try:
        try:
            return image_description(client.images.get(image.name))
        except not_found:
            pass
        progress(f"kafka backend: pulling {image.name} (not on this machine yet)")
        error = _pull(client, image.name)
        try:
            return image_description(client.images.get(image.name))
        except not_found:
            raise ImageUnavailableError(
                f"the container engine answers but cannot provide {image.name}: "
                f"{error or 'the pull ended without the image'}"
            ) from None
    except KafkaImageError:
        raise
    except Exception as exc:
        raise KafkaImageError(f"the container engine failed on {image.name}: {exc}") from None
    finally:
        client.close()


def _pull(client: Any, name: str) -> str | None:
    """Pull ``name``; the engine's error, if it reported one, within the deadline."""
    repository, _, tag = name.rpartition(":")
    deadline = time.monotonic() + _PULL_TIMEOUT_S
    error = None
    try:
        for event in client.api.pull(repository, tag, stream=True, decode=True):
            if isinstance(event, dict) and event.get("error"):
                error = str(event["error"]).strip()
            if time.monotonic() > deadline:
                return f"the pull did not finish within {_PULL_TIMEOUT_S} s"
    except docker_errors().APIError as exc:
        error = str(exc.explanation or exc).strip()
    except Exception as exc:  # the connection broke or timed out mid-pull
        error = f"the pull failed: {exc}"
    return error


def image_description(found: Any) -> str:
    """The image's description label: how it was built, if it says."""
    labels = found.labels or {}
    return str(labels.get("org.opencontainers.image.description", "")).strip()


def origin(description: str) -> str:
    """``, <how it was built>`` from the image's label, or nothing if it says nothing."""
    # A local build's label says "Apache Kafka <version>, built ...": the tag says the first.
    if description.startswith("Apache Kafka "):
        description = description.split(", ", 1)[-1]
    return f", {description}" if description else ""


def describe_image(image: KafkaImage) -> str:
    """What the header says: the image, how it was built if it says, the engine; no pull."""
    kafka = f"Apache Kafka {image.kafka_version}" if image.kafka_version else "Confluent Kafka"
    try:
        client = docker_client(ENGINE_TIMEOUT_S)
    except Exception:
        return f"{image.name}: {kafka}, started on first use"
    try:
        engine = engine_name(client)
        try:
            built = image_description(client.images.get(image.name))
        except Exception:
            built = "pulled on first use"
        return f"{image.name}{origin(built)}: {kafka} via {engine}, started on first use"
    except Exception:
        return f"{image.name}: {kafka}, started on first use"
    finally:
        client.close()
