"""Which images the testcontainers backend runs, and how it networks them; no engine needed.
tests/integration/test_container_backend.py starts real containers."""

from __future__ import annotations

import pytest
import testcontainers.community.kafka as community_kafka

from pyspark_kafka_upgrade.testing import kafka_container
from pyspark_kafka_upgrade.testing.kafka_container import (
    KafkaContainerError,
    KafkaImage,
    network_mode,
    parse_image,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("apache/kafka:4.4.0", KafkaImage("apache/kafka:4.4.0", "apache", "4.4.0")),
        ("apache/kafka:3.7.0", KafkaImage("apache/kafka:3.7.0", "apache", "3.7.0")),
        ("apache/kafka:4.1.0-rc2", KafkaImage("apache/kafka:4.1.0-rc2", "apache", "4.1.0-rc2")),
        # A mirror or a private registry in front of the same image.
        (
            "mirror.example:5000/apache/kafka:4.2.0",
            KafkaImage("mirror.example:5000/apache/kafka:4.2.0", "apache", "4.2.0"),
        ),
        (
            "confluentinc/cp-kafka:8.2.0",
            KafkaImage("confluentinc/cp-kafka:8.2.0", "confluent", "8.2.0"),
        ),
        (
            "confluentinc/cp-kafka:7.0.1",
            KafkaImage("confluentinc/cp-kafka:7.0.1", "confluent", "7.0.1"),
        ),
    ],
)
def test_supported_images_are_recognised(name: str, expected: KafkaImage) -> None:
    assert parse_image(name) == expected


def test_the_kafka_version_is_the_apache_tag_and_unknown_for_confluent() -> None:
    assert parse_image("apache/kafka:4.3.1").kafka_version == "4.3.1"
    assert parse_image("confluentinc/cp-kafka:8.2.0").kafka_version is None


@pytest.mark.parametrize(
    "name",
    [
        # Before the Docker wrapper (3.7.0), and a tag that names no release.
        "apache/kafka:3.6.2",
        "apache/kafka:latest",
        "apache/kafka",
        # ZooKeeper-only Confluent tags, and images with other start scripts.
        "confluentinc/cp-kafka:6.2.0",
        "bitnami/kafka:3.9",
        "apache/kafka-native:4.4.0",
    ],
)
def test_other_images_are_refused_naming_those_that_work(name: str) -> None:
    with pytest.raises(KafkaContainerError) as raised:
        parse_image(name)

    message = str(raised.value)
    assert message.startswith(f"KAFKA_IMAGE={name} is not an image")
    assert "apache/kafka:<3.7.0 or later>" in message
    assert "confluentinc/cp-kafka:<7.0.0 or later>" in message


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

    container = kafka_container._created(parse_image("confluentinc/cp-kafka:8.2.0"), "slirp4netns")

    assert isinstance(container, FakeConfluentContainer)
    # Its own port: the class keeps 9092 for its inter-broker listener.
    assert container.port == 9093
    assert container.ports == {"9093": ("127.0.0.1", None)}
    assert container.kraft and container.kwargs == {"network_mode": "slirp4netns"}
    assert container.env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert container.start_timeout == kafka_container.START_TIMEOUT_S
