"""Delta Lake's jars: the build matched to the running Spark's line, from the Maven cache or
``SPARK_DELTA_JARS``, checked before Spark starts, and the session's confs for a Delta sink.

Nothing here starts Spark or Maven: the cache entries and listed jars are empty files with
the names Maven gives them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_kafka_upgrade._adapters.spark import maven
from pyspark_kafka_upgrade._adapters.spark.delta_jars import (
    DELTA_EXTENSION_CLASS,
    DeltaUnavailableError,
    delta_conf,
    delta_package,
    local_delta_jars,
)
from pyspark_kafka_upgrade._adapters.spark.session import spark_conf
from pyspark_kafka_upgrade._core.settings import Settings, load_settings
from pyspark_kafka_upgrade._example.pipeline import PROJECT

NEWEST = "4.2.0"
OLDEST = "4.0.0"
BUILD_4_2 = ["delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar"]
BUILD_4_0 = ["delta-spark_2.13-4.0.0.jar", "delta-storage-4.0.0.jar"]


@pytest.fixture(autouse=True)
def _no_local_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def files(directory: Path, names: list[str]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(b"")
    return [directory / name for name in names]


def listed(paths: list[Path]) -> str:
    return ",".join(map(str, paths))


def cached_delta(cache: Path, spark_version: str, names: list[str]) -> list[Path]:
    """A complete cache entry as `mvn` leaves it: Delta's jars plus one pyspark ships."""
    entry = cache / maven.entry_name([delta_package(spark_version)])
    jars = files(entry, [*names, "commons-logging-1.3.0.jar"])
    files(entry, ["scala-library-2.13.17.jar"])
    listing = sorted(path.name for path in entry.glob("*.jar"))
    (entry / maven.MANIFEST).write_text("\n".join(listing) + "\n")
    return jars


def delta_settings(connector: str = "python") -> Settings:
    overrides = ["sink.format=delta", f"kafka.connector={connector}"]
    return load_settings(PROJECT, env={}, overrides=overrides).settings


# --- the build for each Spark line ------------------------------------------------------------


@pytest.mark.parametrize(
    ("spark_version", "package"),
    [
        ("4.0.0", "io.delta:delta-spark_2.13:4.0.0"),
        ("4.0.1", "io.delta:delta-spark_2.13:4.0.0"),
        ("4.2.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
    ],
)
def test_each_spark_line_gets_the_delta_build_made_for_it(spark_version: str, package: str) -> None:
    assert delta_package(spark_version) == package


def test_a_spark_line_without_a_known_build_is_refused_naming_the_way_out() -> None:
    with pytest.raises(DeltaUnavailableError) as raised:
        delta_package("4.1.0")

    message = str(raised.value)
    assert "Spark 4.1.0" in message and "4.0.x, 4.2.x" in message
    assert "SPARK_DELTA_JARS" in message and 'sink.format = "parquet"' in message


# --- listed jars --------------------------------------------------------------------------------


@pytest.mark.parametrize(("spark_version", "names"), [(NEWEST, BUILD_4_2), (OLDEST, BUILD_4_0)])
def test_listed_jars_of_the_right_build_are_taken_as_they_are(
    tmp_path: Path, spark_version: str, names: list[str]
) -> None:
    paths = files(tmp_path, [*names, "delta-kernel-api-4.4.0.jar"])

    assert local_delta_jars(listed(paths), spark_version) == [str(p.resolve()) for p in paths]


@pytest.mark.parametrize(("spark_version", "names"), [(NEWEST, BUILD_4_0), (OLDEST, BUILD_4_2)])
def test_a_delta_build_for_another_spark_line_is_refused(
    tmp_path: Path, spark_version: str, names: list[str]
) -> None:
    with pytest.raises(DeltaUnavailableError, match="NoSuchMethodError") as raised:
        local_delta_jars(listed(files(tmp_path, names)), spark_version)

    assert names[0] in str(raised.value)


def test_delta_storage_is_required_beside_delta_spark(tmp_path: Path) -> None:
    with pytest.raises(DeltaUnavailableError, match="lacks delta-storage"):
        local_delta_jars(listed(files(tmp_path, BUILD_4_2[:1])), NEWEST)


def test_delta_jars_of_two_versions_are_refused(tmp_path: Path) -> None:
    names = ["delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.3.0.jar"]

    with pytest.raises(DeltaUnavailableError, match="mixes Delta versions"):
        local_delta_jars(listed(files(tmp_path, names)), NEWEST)


def test_a_listed_jar_that_does_not_exist_is_named(tmp_path: Path) -> None:
    with pytest.raises(DeltaUnavailableError, match="does not exist"):
        local_delta_jars(str(tmp_path / "delta-spark_4.2_2.13-4.4.0.jar"), NEWEST)


# --- the session's confs -------------------------------------------------------------------------


def test_a_delta_sink_loads_the_cached_build_and_delta_s_extension(tmp_path: Path) -> None:
    jars = cached_delta(tmp_path / "cache", NEWEST, BUILD_4_2)

    conf = spark_conf(
        delta_settings(), env={"JAR_CACHE_DIR": str(tmp_path / "cache")}, spark_version=NEWEST
    )

    # scala-library is in pyspark's own jars/: a second copy would be a class conflict.
    assert sorted(conf["spark.jars"].split(",")) == sorted(str(jar.resolve()) for jar in jars)
    assert conf["spark.sql.extensions"] == DELTA_EXTENSION_CLASS
    assert conf["spark.sql.catalog.spark_catalog"].endswith("DeltaCatalog")


def test_a_delta_sink_not_resolved_yet_is_refused_with_advice(tmp_path: Path) -> None:
    with pytest.raises(DeltaUnavailableError) as raised:
        delta_conf(NEWEST, {"JAR_CACHE_DIR": str(tmp_path / "empty")})

    message = str(raised.value)
    assert "io.delta:delta-spark_4.2_2.13:4.4.0" in message
    assert "connector fetch" in message and "SPARK_DELTA_JARS" in message


def test_the_kafka_connector_s_jars_and_delta_s_are_loaded_together(tmp_path: Path) -> None:
    delta = files(tmp_path / "delta", BUILD_4_2)
    kafka = files(
        tmp_path / "kafka",
        [
            f"spark-sql-kafka-0-10_2.13-{NEWEST}.jar",
            f"spark-token-provider-kafka-0-10_2.13-{NEWEST}.jar",
            "kafka-clients-3.9.1.jar",
            "commons-pool2-2.12.1.jar",
        ],
    )
    env = {"SPARK_DELTA_JARS": listed(delta), "SPARK_KAFKA_JARS": listed(kafka)}

    conf = spark_conf(delta_settings("builtin"), env=env, spark_version=NEWEST)

    assert sorted(conf["spark.jars"].split(",")) == sorted(
        str(path.resolve()) for path in [*kafka, *delta]
    )


def test_on_databricks_its_own_delta_and_catalog_are_left_alone(tmp_path: Path) -> None:
    env = {"DATABRICKS_RUNTIME_VERSION": "17.3", "JAR_CACHE_DIR": str(tmp_path / "empty")}

    conf = spark_conf(delta_settings(), env=env, spark_version=NEWEST)

    assert "spark.jars" not in conf
    assert "spark.sql.catalog.spark_catalog" not in conf and "spark.sql.extensions" not in conf


def test_under_spark_submit_the_extension_is_set_and_the_jars_are_its_own(tmp_path: Path) -> None:
    env = {"PYSPARK_GATEWAY_PORT": "41234", "JAR_CACHE_DIR": str(tmp_path / "empty"), "MVN": ""}

    conf = spark_conf(delta_settings(), env=env, spark_version=NEWEST)

    assert "spark.jars" not in conf
    assert conf["spark.sql.extensions"] == DELTA_EXTENSION_CLASS
