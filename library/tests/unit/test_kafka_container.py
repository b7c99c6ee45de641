"""How the testcontainers backend networks its container and drives Confluent's image; no
engine needed. tests/integration/test_container_backend.py starts real containers."""

from __future__ import annotations

import pytest
import testcontainers.community.kafka as community_kafka

from pyspark_kafka_upgrade.testing._kafka import container as kafka_container
from pyspark_kafka_upgrade.testing._kafka.container import KafkaContainerError, network_mode
from pyspark_kafka_upgrade.testing._kafka.image import parse_image


def test_podman_gets_user_mode_networking_and_docker_its_default() -> None:
    assert network_mode("Podman", {}) == "slirp4netns"
    assert network_mode("Docker", {}) is None


def test_the_setting_overrides_the_network_mode_and_empty_means_the_default() -> None:
    assert network_mode("Docker", {"KAFKA_CONTAINER_NETWORK_MODE": "slirp4netns"}) == "slirp4netns"
    assert network_mode("Podman", {"KAFKA_CONTAINER_NETWORK_MODE": "bridge"}) == "bridge"
    assert network_mode("Podman", {"KAFKA_CONTAINER_NETWORK_MODE": " "}) is None


def test_host_networking_is_refused_as_it_would_listen_on_every_interface() -> None:
    with pytest.raises(KafkaContainerError, match="would put the broker on every interface"):
        network_mode("Docker", {"KAFKA_CONTAINER_NETWORK_MODE": "host"})


class FakeConfluentContainer:
    """Records what the backend asks of testcontainers' cp-kafka class; no engine needed."""

    def __init__(self, image: str, port: int) -> None:
        self.image, self.port = image, port
        self.ports: dict[str, object] = {str(port): None}
        self.env: dict[str, str] = {}
        self.kwargs: dict[str, object] = {}
        self.kraft = False
        self.start_timeout: int | None = None

    def with_kraft(self) -> FakeConfluentContainer:
        self.kraft = True
        return self

    def with_env(self, key: str, value: str) -> FakeConfluentContainer:
        self.env[key] = value
        return self

    def with_kwargs(self, **kwargs: object) -> FakeConfluentContainer:
        self.kwargs = kwargs
        return self

    def start(self, timeout: int = 30) -> FakeConfluentContainer:
        self.start_timeout = timeout
        return self


def test_a_confluent_image_runs_in_kraft_mode_on_loopback_with_the_test_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(community_kafka, "KafkaContainer", FakeConfluentContainer)

    image = parse_image("confluentinc/cp-kafka:8.2.0")
    env = {"KAFKA_JVM_PERFORMANCE_OPTS": "-XX:TieredStopAtLevel=1"}
    container = kafka_container._created(image, "slirp4netns", env)

    assert isinstance(container, FakeConfluentContainer)
    # Its own port: the class keeps 9092 for its inter-broker listener.
    assert container.port == 9093
    assert container.ports == {"9093": ("127.0.0.1", None)}
    assert container.kraft and container.kwargs == {"network_mode": "slirp4netns"}
    assert container.env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    # The test JVM's options, in place of the image's G1 tuning (testing._jvm).
    assert container.env["KAFKA_JVM_PERFORMANCE_OPTS"] == "-XX:TieredStopAtLevel=1"
    assert container.start_timeout == kafka_container.START_TIMEOUT_S
