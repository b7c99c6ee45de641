"""How KAFKA_BACKEND, KAFKA_BOOTSTRAP_SERVERS, KAFKA_IMAGE and KAFKA_VERSION select the Kafka
test backend, with fake probes; tests/integration/test_container_backend.py starts containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from pyspark_kafka_upgrade.testing.kafka_backends import (
    BACKEND_CHOICES,
    DEFAULT_KAFKA_IMAGE,
    DEFAULT_KAFKA_VERSION,
    BackendChoice,
    KafkaBackendError,
    apache_problem,
    describe_backend_choice,
    image_problem,
    kafka_coordinates,
    kafka_version,
    resolve_backend_choice,
    start_kafka_backend,
    unique_topic,
)


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


def test_kafka_version_defaults_to_the_newest_4x_and_can_be_set() -> None:
    assert kafka_version({}) == DEFAULT_KAFKA_VERSION == "4.4.0"
    assert kafka_version({"KAFKA_VERSION": " 4.1.2 "}) == "4.1.2"
    assert kafka_coordinates("4.1.2")[0] == "org.apache.kafka:kafka_2.13:4.1.2"


@pytest.mark.parametrize("bad_version", ["3.9.1", "latest", "4.4", "4.4.0; rm -rf /"])
def test_kafka_version_must_be_a_4x_release(bad_version: str) -> None:
    with pytest.raises(KafkaBackendError, match=r"KAFKA_VERSION=.*Apache Kafka 4\.x"):
        kafka_version({"KAFKA_VERSION": bad_version})


def test_auto_with_a_bad_kafka_version_is_an_error_not_a_fallback() -> None:
    with pytest.raises(KafkaBackendError, match="KAFKA_VERSION"):
        resolve_backend_choice({"KAFKA_VERSION": "3.9.1"}, docker_down, apache_ok)


def test_description_names_version_process_and_jar_cache(tmp_path: Path) -> None:
    env = {"KAFKA_VERSION": "4.1.2", "JAR_CACHE_DIR": str(tmp_path)}

    description = describe_backend_choice("apache", env)

    assert description.startswith("Apache Kafka 4.1.2, local KRaft process on 127.0.0.1, ")
    assert f"jars resolved with mvn into {tmp_path}" in description


def test_the_default_image_is_the_official_one_of_the_apache_backends_release() -> None:
    assert f"apache/kafka:{DEFAULT_KAFKA_VERSION}" == DEFAULT_KAFKA_IMAGE


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


def fake_java(tmp_path: Path, version_line: str, exit_code: int = 0) -> Path:
    """A directory whose `java` prints ``version_line`` on stderr, as `java -version` does."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\nexit {exit_code}\n")
    java.chmod(0o755)
    return bin_dir


def test_apache_probe_names_missing_java(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "JAR_CACHE_DIR": str(tmp_path / "cache")}

    problem = apache_problem(env)

    assert problem is not None
    assert problem.startswith("java is not on PATH and JAVA_HOME is not set")


def test_apache_probe_names_an_old_java(tmp_path: Path) -> None:
    bin_dir = fake_java(tmp_path, 'openjdk version "11.0.22" 2024-01-16')
    env = {"PATH": str(bin_dir), "JAR_CACHE_DIR": str(tmp_path / "cache")}

    problem = apache_problem(env)

    assert problem is not None
    assert problem.startswith(f"{bin_dir / 'java'} is Java 11 (")
    assert "needs Java 17 or later" in problem


def test_apache_probe_quotes_a_failing_java(tmp_path: Path) -> None:
    bin_dir = fake_java(tmp_path, "Error: could not open jvm.cfg", exit_code=1)
    env = {"PATH": str(bin_dir), "JAR_CACHE_DIR": str(tmp_path / "cache")}

    problem = apache_problem(env)

    assert problem is not None
    java = bin_dir / "java"
    assert problem.startswith(f"`{java} -version` failed (Error: could not open jvm.cfg)")


def test_apache_probe_says_what_maven_said(tmp_path: Path) -> None:
    bin_dir = fake_java(tmp_path, 'openjdk version "17.0.15" 2025-04-15')
    # An empty MVN turns Maven off, and an empty cache has no jars.
    env = {"PATH": str(bin_dir), "MVN": "", "JAR_CACHE_DIR": str(tmp_path / "cache")}

    problem = apache_problem(env)

    assert problem is not None
    assert problem.startswith("no jars for Apache Kafka 4.4.0: cannot resolve ")
    assert problem.endswith("no `mvn` on PATH (MVN is empty)")


def test_explicit_apache_without_maven_fails_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MVN", "")
    monkeypatch.setenv("JAR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(fake_java(tmp_path, 'openjdk version "17.0.15"')))
    monkeypatch.delenv("JAVA_HOME", raising=False)

    with (
        pytest.raises(KafkaBackendError) as raised,
        start_kafka_backend("apache"),
    ):
        pytest.fail("the backend must not start")

    message = str(raised.value)
    assert message.startswith("KAFKA_BACKEND=apache: no jars for Apache Kafka 4.4.0: ")
    assert message.endswith("no `mvn` on PATH (MVN is empty)")
    assert "\n" not in message


def test_external_without_bootstrap_servers_fails_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)

    with (
        pytest.raises(KafkaBackendError, match="KAFKA_BOOTSTRAP_SERVERS"),
        start_kafka_backend("external"),
    ):
        pytest.fail("the backend must not start")


@pytest.mark.parametrize("prefix", ["orders", "spark source/test", "ünïcode"])
def test_unique_topic_names_are_unique_and_valid(prefix: str) -> None:
    names = {unique_topic(prefix) for _ in range(100)}

    assert len(names) == 100
    for name in names:
        assert 0 < len(name) <= 249
        assert all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
