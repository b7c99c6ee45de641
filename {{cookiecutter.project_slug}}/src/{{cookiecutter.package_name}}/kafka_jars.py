"""Where the built-in Kafka connector's jars come from, checked before Spark starts.

PyPI's pyspark ships no Kafka connector. Spark either resolves it with Ivy from Maven
Central (``spark.jars.packages``), or loads local jars named in ``SPARK_KAFKA_JARS`` (for
machines that cannot reach Maven). Both fail late and obscurely when wrong: Ivy without a
network prints a resolution report and the JVM exits, or hangs for as long as a stalled
repository keeps the connection open; a connector of another Spark version loads and then
fails at the first batch with ``NoSuchMethodError``. So both are checked here, up front.
"""

from __future__ import annotations

import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .errors import PipelineError

SPARK_KAFKA_JARS = "SPARK_KAFKA_JARS"
KAFKA_PROVIDER_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
CONNECTOR_ARTIFACT = "spark-sql-kafka-0-10_2.13"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
# Spark's Ivy uses this instead of Maven Central when set (a company mirror).
ARTIFACT_REPOSITORY_ENV = "DEFAULT_ARTIFACT_REPOSITORY"
# Spark 4's Ivy home below the user's home; spark.jars.ivy chooses another.
IVY_DIR_NAME = ".ivy2.5.2"
PROBE_TIMEOUT_S = 5.0

# The four jars the connector needs, recognised by file name. Only the two Spark jars carry
# Spark's version; kafka-clients and commons-pool2 have their own.
_SPARK_VERSIONED_JARS = (CONNECTOR_ARTIFACT, "spark-token-provider-kafka-0-10_2.13")
_REQUIRED_JARS = (*_SPARK_VERSIONED_JARS, "kafka-clients", "commons-pool2")
_JAR_NAME = re.compile(
    r"(?P<artifact>" + "|".join(map(re.escape, _REQUIRED_JARS)) + r")-(?P<version>.+)\.jar"
)

ADVICE = (
    "let this machine reach Maven Central (or a mirror: spark.jars.repositories or "
    f"{ARTIFACT_REPOSITORY_ENV}), or set {SPARK_KAFKA_JARS} to the four connector jars "
    '(see README, "Connectors"), or set kafka.connector = "python"'
)

Probe = Callable[[str, float], str | None]


class ConnectorUnavailableError(PipelineError):
    """Spark's built-in Kafka connector cannot be loaded, or would fail once loaded."""


def connector_package(spark_version: str) -> str:
    """The Maven coordinate of the connector that matches ``spark_version``."""
    return f"org.apache.spark:{CONNECTOR_ARTIFACT}:{spark_version}"


def builtin_connector_conf(spark_version: str, env: Mapping[str, str]) -> dict[str, str]:
    """``spark.jars`` from ``SPARK_KAFKA_JARS`` when it is set, else ``spark.jars.packages``."""
    listed = env.get(SPARK_KAFKA_JARS, "").strip()
    if listed:
        return {"spark.jars": ",".join(local_connector_jars(listed, spark_version))}
    return {"spark.jars.packages": connector_package(spark_version)}


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


def repositories(conf: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
    """The remote repositories Spark's Ivy would download the connector from."""
    extra = [r.strip() for r in conf.get("spark.jars.repositories", "").split(",") if r.strip()]
    return [env.get(ARTIFACT_REPOSITORY_ENV, "").strip() or MAVEN_CENTRAL, *extra]


def is_cached(spark_version: str, conf: Mapping[str, str]) -> bool:
    """Whether Ivy can find the connector without the network (an earlier download)."""
    name = f"{CONNECTOR_ARTIFACT}-{spark_version}.jar"
    ivy_dir = Path(conf.get("spark.jars.ivy", "").strip() or Path.home() / IVY_DIR_NAME)
    m2 = Path.home() / ".m2" / "repository" / "org" / "apache" / "spark"
    candidates = (
        ivy_dir / "cache" / "org.apache.spark" / CONNECTOR_ARTIFACT / "jars" / name,
        m2 / CONNECTOR_ARTIFACT / spark_version / name,
    )
    return any(candidate.is_file() for candidate in candidates)


def require_reachable_repository(
    spark_version: str,
    conf: Mapping[str, str],
    env: Mapping[str, str] | None = None,
    probe: Probe | None = None,
) -> None:
    """Refuse quickly when Ivy would have nowhere to download the connector from.

    Spark's Ivy sets no network timeouts: with the repository's address unresolvable it
    fails within seconds, but against a repository that accepts the connection and never
    answers it waits indefinitely. A short probe here bounds both cases.
    """
    env = os.environ if env is None else env
    probe = probe_repository if probe is None else probe
    if "spark.jars.ivySettings" in conf or is_cached(spark_version, conf):
        return  # resolvers of the user's own choosing, or no download needed
    failures = []
    for repository in repositories(conf, env):
        reason = probe(repository, PROBE_TIMEOUT_S)
        if reason is None:
            return
        failures.append(f"{repository} ({reason})")
    raise ConnectorUnavailableError(
        f"the built-in Kafka connector {connector_package(spark_version)} is not cached and "
        f"cannot be downloaded: no answer from {'; '.join(failures)}; {ADVICE}"
    )


def probe_repository(url: str, timeout_s: float) -> str | None:
    """None when ``url`` answers at all (any HTTP status), else why it did not."""
    if url.startswith("file:"):
        path = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
        return None if path.is_dir() else f"{path} is not a directory"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None  # the server answered; Ivy will get as far as asking for the files
    except urllib.error.URLError as error:
        return str(error.reason)
    except (TimeoutError, OSError, ValueError) as error:
        return str(error) or type(error).__name__


def describe_jars(conf: Mapping[str, str]) -> str:
    """Where the connector was to come from, for error messages."""
    if "spark.jars.packages" in conf:
        return f"spark.jars.packages={conf['spark.jars.packages']}"
    return f"{SPARK_KAFKA_JARS} ({', '.join(_names(conf.get('spark.jars', '').split(',')))})"


def _names(paths: Sequence[str]) -> list[str]:
    return [Path(path).name for path in paths if path]
