"""Which images the testcontainers backend runs; no engine needed."""

from __future__ import annotations

import pytest

from pyspark_kafka_upgrade.testing import DEFAULT_KAFKA_IMAGE
from pyspark_kafka_upgrade.testing._kafka.apache_runtime import DEFAULT_KAFKA_VERSION
from pyspark_kafka_upgrade.testing._kafka.image import KafkaImage, KafkaImageError, parse_image


def test_the_default_image_is_the_official_one_of_the_apache_backends_release() -> None:
    assert f"apache/kafka:{DEFAULT_KAFKA_VERSION}" == DEFAULT_KAFKA_IMAGE


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
    with pytest.raises(KafkaImageError) as raised:
        parse_image(name)

    message = str(raised.value)
    assert message.startswith(f"KAFKA_IMAGE={name} is not an image")
    assert "apache/kafka:<3.7.0 or later>" in message
    assert "confluentinc/cp-kafka:<7.0.0 or later>" in message
