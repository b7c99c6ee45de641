"""Which Kafka test backend ``KAFKA_BACKEND`` selects, and what the report header says of it.

``auto`` probes only as far as it must, each probe with a deadline: bootstrap servers set,
then a container engine and its image, then Java and Kafka's jars, else noida-db. This
module and the ones it asks import no Kafka client, container library or pyspark at the
top: the plugin loads it in every session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark_kafka_upgrade.testing._kafka.apache_runtime import (
    apache_problem,
    describe_apache,
    kafka_version,
)
from pyspark_kafka_upgrade.testing._kafka.backend import (
    BACKEND_ENV_VAR,
    BOOTSTRAP_ENV_VAR,
    KafkaBackendError,
)
from pyspark_kafka_upgrade.testing._kafka.engine import docker_is_available
from pyspark_kafka_upgrade.testing._kafka.image import (
    container_image,
    describe_image,
    image_problem,
)
from pyspark_kafka_upgrade.testing._kafka.noida import describe_noida

# In the order auto tries them, after "auto" itself.
BACKEND_CHOICES = ("auto", "external", "testcontainers", "apache", "noida")
# Former names, still accepted so that existing CI settings keep working.
_BACKEND_ALIASES = {"local": "noida"}


@dataclass(frozen=True)
class BackendChoice:
    """The backend ``KAFKA_BACKEND`` selects, and why ``auto`` passed over better ones."""

    name: str
    # One line per backend that auto preferred but could not use here.
    passed_over: tuple[str, ...] = ()


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
        return describe_apache(env)
    if name == "noida":
        return describe_noida()
    raise KafkaBackendError(f"unknown Kafka test backend {name!r}")
