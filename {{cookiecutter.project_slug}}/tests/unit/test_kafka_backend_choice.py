"""How KAFKA_BACKEND and KAFKA_BOOTSTRAP_SERVERS select the Kafka test backend."""

from __future__ import annotations

import pytest

from support.kafka_backends import (
    BACKEND_CHOICES,
    KafkaBackendError,
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


@pytest.mark.parametrize("backend_value", [None, "", "auto", "  AUTO "])
def test_auto_with_bootstrap_servers_is_external(backend_value: str | None) -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "broker:9092"}
    if backend_value is not None:
        env["KAFKA_BACKEND"] = backend_value

    assert resolve_backend_choice(env, docker_must_not_be_probed) == "external"


def test_auto_with_docker_is_testcontainers() -> None:
    assert resolve_backend_choice({}, docker_up) == "testcontainers"


def test_auto_without_docker_is_local() -> None:
    assert resolve_backend_choice({"KAFKA_BACKEND": "auto"}, docker_down) == "local"


def test_auto_ignores_blank_bootstrap_servers() -> None:
    assert resolve_backend_choice({"KAFKA_BOOTSTRAP_SERVERS": "  "}, docker_down) == "local"


@pytest.mark.parametrize("name", ["external", "testcontainers", "local"])
def test_explicit_choice_wins_over_environment_and_docker(name: str) -> None:
    env = {"KAFKA_BACKEND": name, "KAFKA_BOOTSTRAP_SERVERS": "broker:9092"}

    assert resolve_backend_choice(env, docker_must_not_be_probed) == name


def test_explicit_choice_is_case_insensitive() -> None:
    assert resolve_backend_choice({"KAFKA_BACKEND": "Local"}, docker_up) == "local"


@pytest.mark.parametrize("bad_value", ["docker", "kafka", "noida-db", "local,external"])
def test_invalid_choice_names_the_allowed_values(bad_value: str) -> None:
    with pytest.raises(KafkaBackendError) as raised:
        resolve_backend_choice({"KAFKA_BACKEND": bad_value}, docker_must_not_be_probed)

    message = str(raised.value)
    assert repr(bad_value) in message
    for allowed in BACKEND_CHOICES:
        assert allowed in message


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
