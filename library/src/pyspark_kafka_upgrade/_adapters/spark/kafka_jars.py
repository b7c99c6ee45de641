"""Where the built-in Kafka connector's jars come from, checked before Spark starts.

PyPI's pyspark ships no Kafka connector. Its jars come from ``SPARK_KAFKA_JARS`` (paths the
user lists), else from Maven: ``mvn`` resolves
``org.apache.spark:spark-sql-kafka-0-10_2.13:<pyspark version>`` once into a per-user cache
(:mod:`.maven`), and the session loads them with ``spark.jars``. Spark's own Ivy
(``spark.jars.packages``) is not used: it has no network timeouts, so a repository that
stops answering hangs the job at start, and it reports failures as a resolution dump
followed by a JVM that exits. Both sources are checked here, up front: a connector of
another Spark version loads and then fails at the first batch with ``NoSuchMethodError``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyspark

from pyspark_kafka_upgrade._adapters.spark import maven
from pyspark_kafka_upgrade._domain.errors import PipelineError

SPARK_KAFKA_JARS = "SPARK_KAFKA_JARS"
KAFKA_PROVIDER_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
CONNECTOR_ARTIFACT = "spark-sql-kafka-0-10_2.13"

# The four jars the connector needs, recognised by file name. Only the two Spark jars carry
# Spark's version; kafka-clients and commons-pool2 have their own.
_SPARK_VERSIONED_JARS = (CONNECTOR_ARTIFACT, "spark-token-provider-kafka-0-10_2.13")
_REQUIRED_JARS = (*_SPARK_VERSIONED_JARS, "kafka-clients", "commons-pool2")
_JAR_NAME = re.compile(
    r"(?P<artifact>" + "|".join(map(re.escape, _REQUIRED_JARS)) + r")-(?P<version>.+)\.jar"
)
# "scala-library-2.13.15.jar" -> "scala-library": the artifact a jar file is named after.
_ARTIFACT_OF = re.compile(r"^(?P<artifact>.+?)-\d[^-]*(?:-[A-Za-z][\w.]*)?\.jar$")

ADVICE = (
    "install Maven (mvn) where it can reach its repository (mirrors and proxies go in "
    f"~/.m2/settings.xml), or run `<pipeline> connector fetch` on a machine that can and set "
    f'{SPARK_KAFKA_JARS} to the four jars it lists (README, "Connectors"), '
    'or set kafka.connector = "python"'
)


class ConnectorUnavailableError(PipelineError):
    """Spark's built-in Kafka connector cannot be loaded, or would fail once loaded."""


def connector_package(spark_version: str) -> str:
    """The Maven coordinate of the connector that matches ``spark_version``."""
    return f"org.apache.spark:{CONNECTOR_ARTIFACT}:{spark_version}"


def builtin_connector_conf(spark_version: str, env: Mapping[str, str]) -> dict[str, str]:
    """``spark.jars`` from ``SPARK_KAFKA_JARS`` when it is set, else from the Maven cache.

    Reads files only; :func:`fetch_connector_jars` fills the cache.

    Raises:
        ConnectorUnavailableError: the listed jars are wrong, or nothing is cached yet.
    """
    listed = env.get(SPARK_KAFKA_JARS, "").strip()
    if listed:
        return {"spark.jars": ",".join(local_connector_jars(listed, spark_version))}
    cached = maven.cached_jars([connector_package(spark_version)], env)
    if not cached:
        raise ConnectorUnavailableError(
            f"the built-in Kafka connector {connector_package(spark_version)} has not been "
            f"resolved on this machine yet; {ADVICE}"
        )
    return {"spark.jars": ",".join(connector_jars_of(cached, spark_version))}


def fetch_connector_jars(
    spark_version: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    timeout_s: float = maven.DEFAULT_TIMEOUT_S,
    progress: maven.Progress | None = None,
) -> list[str]:
    """The connector's jars for ``spark_version``: listed, cached, or resolved now with mvn.

    Raises:
        ConnectorUnavailableError: Maven is missing or failed (its command and first error
            are quoted), or the listed jars are wrong.
    """
    env = os.environ if env is None else env
    version = spark_version or pyspark.__version__
    listed = env.get(SPARK_KAFKA_JARS, "").strip()
    if listed:
        return local_connector_jars(listed, version)
    try:
        resolved = maven.runtime_jars(
            [connector_package(version)], env=env, timeout_s=timeout_s, progress=progress
        )
    except maven.MavenError as error:
        raise ConnectorUnavailableError(
            f"the built-in Kafka connector {connector_package(version)} could not be "
            f"resolved: {error}; {ADVICE}"
        ) from None
    return connector_jars_of(resolved, version)


def connector_jars_of(resolved: Sequence[Path], spark_version: str) -> list[str]:
    """The resolved jars Spark does not already ship, checked like ``SPARK_KAFKA_JARS``.

    The connector's runtime closure also holds scala-library, hadoop-client and others that
    pyspark has in its own ``jars/``; a second copy of those on the classpath, in another
    version, is how class conflicts start.
    """
    shipped = spark_shipped_artifacts()
    extra = [
        path for path in resolved if _artifact(path.name) not in shipped or _required(path.name)
    ]
    return local_connector_jars(",".join(map(str, extra)), spark_version)


def spark_shipped_artifacts() -> frozenset[str]:
    """The artifact names of the jars in the installed pyspark's ``jars/`` directory."""
    jars_dir = Path(pyspark.__file__).parent / "jars"
    return frozenset(_artifact(path.name) for path in jars_dir.glob("*.jar"))


def _artifact(name: str) -> str:
    match = _ARTIFACT_OF.match(name)
    return match["artifact"] if match else name


def _required(name: str) -> bool:
    return _JAR_NAME.fullmatch(name) is not None


def local_connector_jars(listed: str, spark_version: str) -> list[str]:
    """The absolute paths in a comma-separated ``SPARK_KAFKA_JARS``, once each is checked."""
    paths = [Path(item.strip()).expanduser() for item in listed.split(",") if item.strip()]
    found: dict[str, str] = {}
    for path in paths:
        if not path.is_file():
            raise ConnectorUnavailableError(
                f"{SPARK_KAFKA_JARS} lists {path}, which does not exist or is not a file"
            )
        match = _JAR_NAME.fullmatch(path.name)
        if match is None:
            continue  # an extra jar the job wants on the classpath anyway
        artifact, version = match["artifact"], match["version"]
        if artifact in _SPARK_VERSIONED_JARS and version != spark_version:
            raise ConnectorUnavailableError(
                f"{SPARK_KAFKA_JARS} has {path.name} (version {version}) but pyspark is "
                f"{spark_version}; the connector must match Spark exactly, or the first batch "
                f"fails with NoSuchMethodError: use the {spark_version} jars"
            )
        found[artifact] = path.name
    missing = [artifact for artifact in _REQUIRED_JARS if artifact not in found]
    if missing:
        wanted = ", ".join(
            f"{a}-{spark_version}.jar" if a in _SPARK_VERSIONED_JARS else f"{a}-<version>.jar"
            for a in missing
        )
        raise ConnectorUnavailableError(
            f"{SPARK_KAFKA_JARS} lacks {wanted}; the built-in connector needs all four of "
            f"{', '.join(_REQUIRED_JARS)}"
        )
    return [str(path.resolve()) for path in paths]


def describe_jars(conf: Mapping[str, str]) -> str:
    """The connector jars a session was given, for error messages."""
    return ", ".join(Path(path).name for path in conf.get("spark.jars", "").split(",") if path)
