"""What the apache backend needs, and how it says what is missing: Java 17+, Kafka's jars,
a Kafka 4.x version. A fake ``java`` stands in for the JDK; no broker starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_kafka_upgrade.testing._kafka.apache_runtime import (
    DEFAULT_KAFKA_VERSION,
    apache_problem,
    kafka_coordinates,
    kafka_version,
)
from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackendError
from support.fake_java import fake_java


def test_kafka_version_defaults_to_the_newest_4x_and_can_be_set() -> None:
    assert kafka_version({}) == DEFAULT_KAFKA_VERSION == "4.4.0"
    assert kafka_version({"KAFKA_VERSION": " 4.1.2 "}) == "4.1.2"
    assert kafka_coordinates("4.1.2")[0] == "org.apache.kafka:kafka_2.13:4.1.2"


@pytest.mark.parametrize("bad_version", ["3.9.1", "latest", "4.4", "4.4.0; rm -rf /"])
def test_kafka_version_must_be_a_4x_release(bad_version: str) -> None:
    with pytest.raises(KafkaBackendError, match=r"KAFKA_VERSION=.*Apache Kafka 4\.x"):
        kafka_version({"KAFKA_VERSION": bad_version})


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
