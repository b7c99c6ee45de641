"""How KAFKA_BACKEND, KAFKA_BOOTSTRAP_SERVERS, KAFKA_IMAGE and KAFKA_VERSION select the Kafka
test backend, with fake probes, and what the header says of each; the probes themselves are
tested beside their backends, and tests/integration/test_container_backend.py starts
containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from pyspark_kafka_upgrade.testing import DEFAULT_KAFKA_IMAGE
from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackendError
from pyspark_kafka_upgrade.testing._kafka.choice import (
    BACKEND_CHOICES,
    BackendChoice,
    describe_backend_choice,
    resolve_backend_choice,
)
from pyspark_kafka_upgrade.testing._kafka.image import image_problem


def docker_up() -> bool:
    return True


def docker_down() -> bool:
    return False


def docker_must_not_be_probed() -> bool:
    raise AssertionError("Docker was probed although the choice did not depend on it")


def apache_ok(env: Mapping[str, str]) -> str | None:
    return None


def apache_without_mvn(env: Mapping[str, str]) -> str | None:
    return "no jars for Apache Kafka 4.4.0: cannot resolve ...: no `mvn` on PATH"


def apache_must_not_be_probed(env: Mapping[str, str]) -> str | None:
    raise AssertionError("Java and Maven were probed although the choice did not depend on it")


@pytest.mark.parametrize("backend_value", [None, "", "auto", "  AUTO "])
def test_auto_with_bootstrap_servers_is_external(backend_value: str | None) -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "broker:9092"}
    if backend_value is not None:
        env["KAFKA_BACKEND"] = backend_value

    choice = resolve_backend_choice(env, docker_must_not_be_probed, apache_must_not_be_probed)

    assert choice == BackendChoice("external")


def image_there(env: Mapping[str, str]) -> str | None:
    return None


PULL_ERROR = (
    "the container engine answers but cannot provide apache/kafka:4.4.0: initializing source: "
    "pinging container registry: no such host"
)


def image_cannot_be_pulled(env: Mapping[str, str]) -> str | None:
    return PULL_ERROR


def test_auto_with_docker_is_testcontainers() -> None:
    choice = resolve_backend_choice({}, docker_up, apache_must_not_be_probed, image_there)

    assert choice == BackendChoice("testcontainers")


def test_auto_falls_back_with_the_pull_error_when_the_engine_cannot_provide_the_image() -> None:
    choice = resolve_backend_choice({}, docker_up, apache_ok, image_cannot_be_pulled)

    assert choice == BackendChoice(
        "apache", (f"testcontainers skipped: {PULL_ERROR}; trying the next backend",)
    )


def test_without_docker_the_image_is_not_probed() -> None:
    def image_must_not_be_probed(env: Mapping[str, str]) -> str | None:
        raise AssertionError("the image was probed although no engine answered")

    choice = resolve_backend_choice({}, docker_down, apache_ok, image_must_not_be_probed)

    assert choice == BackendChoice("apache")


def test_both_reasons_are_named_when_auto_ends_on_noida() -> None:
    choice = resolve_backend_choice({}, docker_up, apache_without_mvn, image_cannot_be_pulled)

    assert choice.name == "noida"
    assert [note.split(":")[0] for note in choice.passed_over] == [
        "testcontainers skipped",
        "apache skipped",
    ]


def test_auto_without_docker_is_apache_kafka_when_java_and_jars_are_there() -> None:
    choice = resolve_backend_choice({"KAFKA_BACKEND": "auto"}, docker_down, apache_ok)

    assert choice == BackendChoice("apache")


def test_auto_without_docker_java_or_maven_is_noida_and_says_why() -> None:
    choice = resolve_backend_choice({}, docker_down, apache_without_mvn)

    assert choice.name == "noida"
    [note] = choice.passed_over
    assert note.startswith("apache skipped: no jars for Apache Kafka 4.4.0")
    assert "no `mvn` on PATH" in note
    assert "(tried: java, then Apache Kafka 4.4.0's jars from the jar cache, else mvn)" in note
    assert note.endswith("using noida-db instead")
    assert "\n" not in note


def test_auto_ignores_blank_bootstrap_servers() -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "  "}

    assert resolve_backend_choice(env, docker_down, apache_ok) == BackendChoice("apache")


@pytest.mark.parametrize("name", ["external", "testcontainers", "apache", "noida"])
def test_explicit_choice_wins_over_environment_and_probes(name: str) -> None:
    env = {"KAFKA_BACKEND": name, "KAFKA_BOOTSTRAP_SERVERS": "broker:9092"}

    choice = resolve_backend_choice(env, docker_must_not_be_probed, apache_must_not_be_probed)

    assert choice == BackendChoice(name)


def test_explicit_choice_is_case_insensitive() -> None:
    choice = resolve_backend_choice({"KAFKA_BACKEND": "Apache"}, docker_up, apache_ok)

    assert choice == BackendChoice("apache")


def test_local_is_the_former_name_of_noida() -> None:
    choice = resolve_backend_choice(
        {"KAFKA_BACKEND": "local"}, docker_must_not_be_probed, apache_must_not_be_probed
    )

    assert choice == BackendChoice("noida")


@pytest.mark.parametrize("bad_value", ["docker", "kafka", "noida-db", "local,external"])
def test_invalid_choice_names_the_allowed_values(bad_value: str) -> None:
    with pytest.raises(KafkaBackendError) as raised:
        resolve_backend_choice(
            {"KAFKA_BACKEND": bad_value}, docker_must_not_be_probed, apache_must_not_be_probed
        )

    message = str(raised.value)
    assert repr(bad_value) in message
    for allowed in BACKEND_CHOICES:
        assert allowed in message


def test_auto_with_a_bad_kafka_version_is_an_error_not_a_fallback() -> None:
    with pytest.raises(KafkaBackendError, match="KAFKA_VERSION"):
        resolve_backend_choice({"KAFKA_VERSION": "3.9.1"}, docker_down, apache_ok)


def test_description_names_version_process_and_jar_cache(tmp_path: Path) -> None:
    env = {"KAFKA_VERSION": "4.1.2", "JAR_CACHE_DIR": str(tmp_path)}

    description = describe_backend_choice("apache", env)

    assert description.startswith("Apache Kafka 4.1.2, local KRaft process on 127.0.0.1, ")
    assert f"jars resolved with mvn into {tmp_path}" in description


def test_description_of_testcontainers_names_the_image_and_its_kafka() -> None:
    # No engine answers on this address: the description says so without a traceback.
    no_engine = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCKER_HOST", no_engine["DOCKER_HOST"])
        default = describe_backend_choice("testcontainers", no_engine)
        custom = describe_backend_choice(
            "testcontainers", {**no_engine, "KAFKA_IMAGE": "confluentinc/cp-kafka:7.9.0"}
        )
    assert default == f"{DEFAULT_KAFKA_IMAGE}: Apache Kafka 4.4.0, started on first use"
    assert custom == "confluentinc/cp-kafka:7.9.0: Confluent Kafka, started on first use"


def test_a_bad_image_is_an_error_not_a_fallback() -> None:
    with pytest.raises(KafkaBackendError, match=r"KAFKA_IMAGE=bitnami/kafka:3.9 is not an image"):
        resolve_backend_choice(
            {"KAFKA_IMAGE": "bitnami/kafka:3.9", "KAFKA_BACKEND": "auto"},
            docker_up,
            apache_ok,
            lambda env: image_problem(env),
        )
