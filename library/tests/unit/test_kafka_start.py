"""Starting a backend that cannot start fails at once, in one line naming what to set;
tests/integration/test_kafka_backend_smoke.py starts real brokers."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackendError
from pyspark_kafka_upgrade.testing._kafka.start import start_kafka_backend
from support.fake_java import fake_java


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
