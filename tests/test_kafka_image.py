"""The Kafka image CI builds (.ci/kafka-image) is the broker the library's default image
names: the same Kafka release and logging binding as the apache backend, under the
official image's name, on its interface."""

from __future__ import annotations

import re

from conftest import TEMPLATE_DIR
from pyspark_kafka_upgrade.testing import DEFAULT_KAFKA_IMAGE, kafka_coordinates

IMAGE_DIR = TEMPLATE_DIR / ".ci" / "kafka-image"


def build_default(name: str) -> str:
    match = re.search(
        rf"^{name}=\$\{{{name}:-([^}}]+)\}}$", (IMAGE_DIR / "build").read_text(), re.M
    )
    assert match is not None, f"no default for {name} in .ci/kafka-image/build"
    return match.group(1)


def test_the_image_is_the_release_and_binding_the_apache_backend_runs() -> None:
    version = build_default("KAFKA_VERSION")
    binding = kafka_coordinates(version)[1]

    assert f"apache/kafka:{version}" == DEFAULT_KAFKA_IMAGE
    assert binding.endswith(f":{build_default('LOG4J_VERSION')}")


def test_the_image_keeps_the_official_interface() -> None:
    containerfile = (IMAGE_DIR / "Containerfile").read_text()

    assert 'CMD ["/etc/kafka/docker/run"]' in containerfile
    assert "USER appuser" in containerfile and "EXPOSE 9092" in containerfile
    assert "COPY libs/ /opt/kafka/libs/" in containerfile
    # Kafka's own wrapper renders the KAFKA_* variables; the defaults it needs are copied.
    launcher = (IMAGE_DIR / "run").read_text()
    assert "kafka.docker.KafkaDockerWrapper setup" in launcher
    for default in ("server.properties", "log4j2.yaml", "tools-log4j2.yaml"):
        assert (IMAGE_DIR / default).is_file() and default in containerfile
