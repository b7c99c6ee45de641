"""Where Delta Lake's jars come from, matched to the running Spark and checked before it starts.

The way the built-in Kafka connector's come (``kafka_jars``): ``SPARK_DELTA_JARS`` (paths the
user lists), else Maven into the same per-user cache (:mod:`.maven`). The Python package
``delta-spark`` is not used for this: it requires only ``pyspark>=4.0`` whatever jar it
would pick, and from Delta 4.1 on each build names the Spark line it was built for, so only
the library can match one to the Spark that runs (a jar for another line fails at the first
write with ``NoSuchMethodError``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyspark

from pyspark_kafka_upgrade._adapters.spark import maven
from pyspark_kafka_upgrade._adapters.spark.kafka_jars import spark_shipped_artifacts
from pyspark_kafka_upgrade._domain.errors import PipelineError

SPARK_DELTA_JARS = "SPARK_DELTA_JARS"
DELTA_EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"
# What makes a session read and write Delta tables by path and by name.
DELTA_SESSION_CONF = {
    "spark.sql.extensions": DELTA_EXTENSION_CLASS,
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
# For a session on one machine: Delta rebuilds a table's snapshot from its log in 50 tasks by
# default, sized for a cluster; on one core, that is 50 tasks of scheduling for a small log.
LOCAL_DELTA_CONF = {"spark.databricks.delta.snapshotPartitions": "1"}
# The Delta build for each Spark line CI tests (FACTS §9: Maven serves these; the newer
# delta-spark_4.2_2.13:4.4.1 is not served). A line not here is refused, never guessed.
DELTA_FOR_SPARK: dict[str, str] = {
    "4.0": "io.delta:delta-spark_2.13:4.0.0",
    "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
}
_REQUIRED = ("delta-spark", "delta-storage")
# delta-spark_2.13-4.0.0.jar, delta-spark_4.2_2.13-4.4.0.jar, delta-storage-4.4.0.jar
_JAR_NAME = re.compile(
    r"(?P<artifact>delta-spark|delta-storage)(?:_(?P<spark>[34]\.\d+))?(?:_2\.1[23])?"
    r"-(?P<version>\d[\w.+-]*)\.jar"
)
_ARTIFACT_OF = re.compile(r"^(?P<artifact>.+?)-\d[^-]*(?:-[A-Za-z][\w.]*)?\.jar$")

ADVICE = (
    "install Maven (mvn) where it can reach its repository (mirrors and proxies go in "
    "~/.m2/settings.xml), or run `<pipeline> connector fetch` on a machine that can and set "
    f'{SPARK_DELTA_JARS} to the Delta jars it lists (README, "Delta"), '
    'or set sink.format = "parquet"'
)


class DeltaUnavailableError(PipelineError):
    """Delta Lake's jars cannot be had for the running Spark, or would fail once loaded."""


def spark_line(spark_version: str) -> str:
    """``4.2.0`` -> ``4.2``."""
    return ".".join(spark_version.split(".")[:2])


def delta_package(spark_version: str) -> str:
    """The Maven coordinate of the Delta build for ``spark_version``'s line.

    Raises DeltaUnavailableError for a line no known Delta build matches."""
    line = spark_line(spark_version)
    try:
        return DELTA_FOR_SPARK[line]
    except KeyError:
        known = ", ".join(f"{known}.x" for known in DELTA_FOR_SPARK)
        raise DeltaUnavailableError(
            f"no Delta Lake build is known for Spark {spark_version} (known: {known}); set "
            f"{SPARK_DELTA_JARS} to the delta-spark and delta-storage jars built for Spark "
            f'{line}, or set sink.format = "parquet"'
        ) from None


def delta_conf(spark_version: str, env: Mapping[str, str]) -> dict[str, str]:
    """``spark.jars`` (from ``SPARK_DELTA_JARS`` when set, else the Maven cache) and the
    session extension. Reads files only; :func:`fetch_delta_jars` fills the cache.

    Raises DeltaUnavailableError: the listed jars are wrong, or nothing is cached yet."""
    listed = env.get(SPARK_DELTA_JARS, "").strip()
    if listed:
        jars = local_delta_jars(listed, spark_version)
    else:
        package = delta_package(spark_version)
        cached = maven.cached_jars([package], env)
        if not cached:
            raise DeltaUnavailableError(
                f"Delta Lake {package} has not been resolved on this machine yet; {ADVICE}"
            )
        jars = delta_jars_of(cached, spark_version)
    return {"spark.jars": ",".join(jars), **DELTA_SESSION_CONF}


def fetch_delta_jars(
    spark_version: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    timeout_s: float = maven.DEFAULT_TIMEOUT_S,
    progress: maven.Progress | None = None,
) -> list[str]:
    """Delta's jars for ``spark_version``: listed, cached, or resolved now with mvn.

    Raises DeltaUnavailableError: Maven is missing or failed (its command and first error
    quoted), the Spark line has no known build, or the listed jars are wrong."""
    env = os.environ if env is None else env
    version = spark_version or pyspark.__version__
    listed = env.get(SPARK_DELTA_JARS, "").strip()
    if listed:
        return local_delta_jars(listed, version)
    package = delta_package(version)
    try:
        resolved = maven.runtime_jars([package], env=env, timeout_s=timeout_s, progress=progress)
    except maven.MavenError as error:
        raise DeltaUnavailableError(
            f"Delta Lake {package} could not be resolved: {error}; {ADVICE}"
        ) from None
    return delta_jars_of(resolved, version)


def delta_jars_of(resolved: Sequence[Path], spark_version: str) -> list[str]:
    """The resolved jars pyspark does not ship already (a second scala-library or Hadoop
    client on the classpath, in another version, is how class conflicts start), checked as
    ``SPARK_DELTA_JARS`` is."""
    shipped = spark_shipped_artifacts()
    extra = [
        path
        for path in resolved
        if _artifact(path.name) not in shipped or _JAR_NAME.fullmatch(path.name)
    ]
    return local_delta_jars(",".join(map(str, extra)), spark_version)


def local_delta_jars(listed: str, spark_version: str) -> list[str]:
    """The absolute paths of a comma-separated ``SPARK_DELTA_JARS``, once each is checked:
    delta-spark and delta-storage of one Delta version, built for this Spark line."""
    paths = [Path(item.strip()).expanduser() for item in listed.split(",") if item.strip()]
    versions: dict[str, str] = {}
    for path in paths:
        if not path.is_file():
            raise DeltaUnavailableError(
                f"{SPARK_DELTA_JARS} lists {path}, which does not exist or is not a file"
            )
        match = _JAR_NAME.fullmatch(path.name)
        if match is None:
            continue  # one of Delta's own dependencies
        artifact = match["artifact"]
        versions[artifact] = match["version"]
        if artifact == "delta-spark":
            _check_spark_line(path.name, match["spark"], match["version"], spark_version)
    missing = [artifact for artifact in _REQUIRED if artifact not in versions]
    if missing:
        raise DeltaUnavailableError(
            f"{SPARK_DELTA_JARS} lacks {', '.join(f'{a}-<version>.jar' for a in missing)}; "
            f"Delta needs both {' and '.join(_REQUIRED)}, of one version"
        )
    if len(set(versions.values())) > 1:
        raise DeltaUnavailableError(
            f"{SPARK_DELTA_JARS} mixes Delta versions ({', '.join(sorted(set(versions.values())))}"
            "): delta-spark and delta-storage must be of one version"
        )
    return [str(path.resolve()) for path in paths]


def _check_spark_line(name: str, built_for: str | None, version: str, spark_version: str) -> None:
    line = spark_line(spark_version)
    # Builds before Delta 4.1 do not name their Spark line; the one this library knows of is
    # Delta 4.0.x for Spark 4.0.
    if built_for is None:
        built_for = "4.0" if version.startswith("4.0.") else None
    if built_for != line:
        expected = DELTA_FOR_SPARK.get(line, f"a delta-spark_{line}_2.13 jar").split(":")
        wanted = "-".join(expected[1:]) + ".jar" if len(expected) == 3 else expected[0]
        raise DeltaUnavailableError(
            f"{SPARK_DELTA_JARS} has {name}, not built for Spark {line} (pyspark is "
            f"{spark_version}); a Delta build for another Spark line fails at the first write "
            f"with NoSuchMethodError: use {wanted}"
        )


def _artifact(name: str) -> str:
    match = _ARTIFACT_OF.match(name)
    return match["artifact"] if match else name
