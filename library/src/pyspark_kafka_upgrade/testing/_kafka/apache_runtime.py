"""What the ``apache`` backend runs on: Java 17+, Kafka's jars from Maven, and its version.

The checks are cheap once the jars are cached; ``auto`` asks :func:`apache_problem` whether
to take this backend, and the header describes it with :func:`describe_apache` without
resolving anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pyspark_kafka_upgrade._adapters.spark import maven
from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackendError, Progress

VERSION_ENV_VAR = "KAFKA_VERSION"
DEFAULT_KAFKA_VERSION = "4.4.0"

# Kafka 4 runs on log4j2; its runtime dependencies bring slf4j-api 1.7.x and log4j-core, so
# the slf4j 1.x binding of the same log4j release routes the broker's logging into log4j2.
_KAFKA_LOGGING_BINDING = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.5"
# 4.x only: the broker's configuration is KRaft-only, and 3.x logs through log4j 1.
_KAFKA_VERSION_PATTERN = re.compile(r"4\.\d+\.\d+")
# Cold, Maven downloads about 40 jars (~35 MB); afterwards the cache answers at once.
_KAFKA_JARS_TIMEOUT_S = 300.0


class ApacheRuntimeError(KafkaBackendError):
    """Java or the Kafka jars cannot be had here: auto falls back, an explicit choice fails."""


def kafka_version(env: Mapping[str, str]) -> str:
    """The Apache Kafka version of the ``apache`` backend: ``KAFKA_VERSION``, else 4.4.0."""
    raw = env.get(VERSION_ENV_VAR, "")
    version = raw.strip() or DEFAULT_KAFKA_VERSION
    if _KAFKA_VERSION_PATTERN.fullmatch(version) is None:
        raise KafkaBackendError(
            f"{VERSION_ENV_VAR}={raw!r} is not an Apache Kafka 4.x release such as "
            f"{DEFAULT_KAFKA_VERSION}: the apache backend runs Kafka 4 (KRaft, log4j2) only"
        )
    return version


def kafka_coordinates(version: str) -> list[str]:
    """The Maven coordinates whose runtime classpath is a runnable broker."""
    return [f"org.apache.kafka:kafka_2.13:{version}", _KAFKA_LOGGING_BINDING]


def apache_problem(env: Mapping[str, str], progress: Progress | None = None) -> str | None:
    """None when the ``apache`` backend can start here, else one line saying why not.

    Checks Java, then the broker's jars: from the jar cache, else resolved with ``mvn`` now
    (once per machine; ``progress`` hears about it). Every step has a deadline.

    Raises:
        KafkaBackendError: ``KAFKA_VERSION`` is not a Kafka 4.x version (a setting to fix,
            not a reason to fall back).
    """
    try:
        apache_runtime(env, progress)
    except ApacheRuntimeError as exc:
        return str(exc)
    return None


def apache_runtime(
    env: Mapping[str, str], progress: Progress | None
) -> tuple[str, list[Path], str]:
    """Java, the broker's classpath and its version.

    Raises:
        ApacheRuntimeError: no usable Java, or no jars.
        KafkaBackendError: ``KAFKA_VERSION`` is not a Kafka 4.x version.
    """
    version = kafka_version(env)
    java = _java_executable(env)
    try:
        jars = maven.runtime_jars(
            kafka_coordinates(version),
            env=env,
            timeout_s=_KAFKA_JARS_TIMEOUT_S,
            progress=progress,
        )
    except maven.MavenError as exc:
        raise ApacheRuntimeError(f"no jars for Apache Kafka {version}: {exc}") from None
    return java, jars, version


def describe_apache(env: Mapping[str, str]) -> str:
    """What the header says of the ``apache`` backend, resolving nothing."""
    try:
        version = kafka_version(env)
    except KafkaBackendError as exc:
        return f"cannot start: {exc}"
    coordinates = kafka_coordinates(version)
    entry = maven.cache_root(env) / maven.entry_name(coordinates)
    jars = (
        f"jars from {entry}"
        if maven.cached_jars(coordinates, env)
        else f"jars resolved with mvn into {entry} on first use"
    )
    return f"Apache Kafka {version}, local KRaft process on 127.0.0.1, {jars}"


def _java_executable(env: Mapping[str, str]) -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH, checked as Spark's session checks it.

    Kafka 4 needs Java 17 or later, as Spark 4 does: one check serves both.
    """
    try:
        # Here, not above: the session adapter imports pyspark, which only this step needs.
        from pyspark_kafka_upgrade._adapters.spark.session import (
            SparkEnvironmentError,
            check_java,
            java_executable,
        )
    except ImportError as exc:
        raise ApacheRuntimeError(
            f"Java is checked as Spark checks it, with pyspark: {exc}"
        ) from None
    try:
        check_java(env)
        return java_executable(env)
    except SparkEnvironmentError as exc:
        raise ApacheRuntimeError(str(exc)) from None
