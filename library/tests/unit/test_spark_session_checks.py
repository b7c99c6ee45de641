"""What the job's SparkSession is configured with, and the checks made before the JVM starts.

None of these start Spark: the confs are built by a pure function from the environment and
the jar cache, and Java and pyarrow are reached through injected runners.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pyspark
import pytest

from pyspark_kafka_upgrade._adapters.spark import maven
from pyspark_kafka_upgrade._adapters.spark import session as spark_session
from pyspark_kafka_upgrade._adapters.spark.kafka_jars import (
    ConnectorUnavailableError,
    connector_package,
)
from pyspark_kafka_upgrade._adapters.spark.session import (
    SparkEnvironmentError,
    check_java,
    check_pyarrow,
    local_session_factory,
    parse_java_version,
    spark_conf,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT

SPARK_VERSION = pyspark.__version__
# Any version but the running one: the connector must match Spark exactly.
OTHER_VERSION = "3.5.1" if SPARK_VERSION != "3.5.1" else "3.5.0"
COORDINATE = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}"


@pytest.fixture(autouse=True)
def _no_local_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ./pipeline.toml is read when present; run where there is none.
    monkeypatch.chdir(tmp_path)


def settings_with(connector: str) -> Settings:
    return load_settings(PROJECT, env={}, overrides=[f"kafka.connector={connector}"]).settings


def connector_jars(directory: Path, version: str = SPARK_VERSION) -> list[Path]:
    names = [
        f"spark-sql-kafka-0-10_2.13-{version}.jar",
        f"spark-token-provider-kafka-0-10_2.13-{version}.jar",
        "kafka-clients-3.9.1.jar",
        "commons-pool2-2.12.1.jar",
    ]
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(b"")
    return [directory / name for name in names]


class Built:
    """Stands for the sessions ``build_spark_session`` would start; records each start."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None, dict[str, str]]] = []

    def __call__(
        self,
        settings: Settings,
        *,
        app_name: str,
        master: str | None = None,
        extra_conf: dict[str, str] | None = None,
    ) -> object:
        self.calls.append((settings.kafka.connector, app_name, master, dict(extra_conf or {})))
        return object()


def jars_env(paths: Sequence[Path]) -> dict[str, str]:
    return {"SPARK_KAFKA_JARS": ",".join(map(str, paths))}


# --- confs ----------------------------------------------------------------------------------


def test_python_connector_needs_no_jars_and_runs_workers_on_this_interpreter() -> None:
    conf = spark_conf(settings_with("python"), env={})

    assert conf == {"spark.sql.session.timeZone": "UTC", "spark.pyspark.python": sys.executable}


def cached_connector(cache: Path, version: str = SPARK_VERSION) -> list[Path]:
    """A complete cache entry as `mvn` leaves it: the four jars plus one Spark ships itself."""
    entry = cache / maven.entry_name([connector_package(version)])
    jars = connector_jars(entry, version)
    (entry / "scala-library-2.13.15.jar").write_bytes(b"")
    names = sorted(path.name for path in entry.glob("*.jar"))
    (entry / maven.MANIFEST).write_text("\n".join(names) + "\n")
    return jars


def test_builtin_connector_loads_the_jars_maven_resolved(tmp_path: Path) -> None:
    jars = cached_connector(tmp_path / "cache")

    conf = spark_conf(settings_with("builtin"), env={"JAR_CACHE_DIR": str(tmp_path / "cache")})

    # scala-library is in pyspark's own jars/: a second copy would be a class conflict.
    assert sorted(conf["spark.jars"].split(",")) == sorted(str(jar.resolve()) for jar in jars)
    assert "spark.jars.packages" not in conf


def test_builtin_connector_not_resolved_yet_is_refused_with_advice(tmp_path: Path) -> None:
    with pytest.raises(ConnectorUnavailableError) as raised:
        spark_conf(settings_with("builtin"), env={"JAR_CACHE_DIR": str(tmp_path / "empty")})

    message = str(raised.value)
    assert COORDINATE in message
    assert "connector fetch" in message
    assert "SPARK_KAFKA_JARS" in message
    assert 'kafka.connector = "python"' in message


@pytest.mark.parametrize(
    "launcher", [{"PYSPARK_GATEWAY_PORT": "41234"}, {"DATABRICKS_RUNTIME_VERSION": "17.3"}]
)
def test_under_spark_submit_or_a_platform_the_launchers_jars_are_used(
    tmp_path: Path, launcher: dict[str, str]
) -> None:
    # Nothing is cached and no mvn is asked: the JVM that started this Python already has
    # the classpath spark-submit (--jars, --packages) or the platform's runtime gave it.
    env = {"JAR_CACHE_DIR": str(tmp_path / "empty"), "MVN": "", **launcher}

    conf = spark_conf(settings_with("builtin"), env=env)

    assert "spark.jars" not in conf
    assert not (tmp_path / "empty").exists()


def test_the_callers_jars_are_kept_beside_the_connector(tmp_path: Path) -> None:
    jars = cached_connector(tmp_path / "cache")
    extra = {"spark.jars": "/opt/jars/delta-spark_2.13-4.0.0.jar"}

    conf = spark_conf(
        settings_with("builtin"), extra_conf=extra, env={"JAR_CACHE_DIR": str(tmp_path / "cache")}
    )

    listed = conf["spark.jars"].split(",")
    assert listed[0] == "/opt/jars/delta-spark_2.13-4.0.0.jar"
    assert sorted(listed[1:]) == sorted(str(jar.resolve()) for jar in jars)


def test_an_interpreter_the_user_chose_is_kept() -> None:
    conf = spark_conf(settings_with("python"), env={"PYSPARK_PYTHON": "/opt/py/bin/python"})

    assert conf["spark.pyspark.python"] == "/opt/py/bin/python"


def test_matching_local_jars_replace_the_package(tmp_path: Path) -> None:
    jars = connector_jars(tmp_path / "jars")

    conf = spark_conf(settings_with("builtin"), env=jars_env(jars))

    assert conf["spark.jars"] == ",".join(str(jar.resolve()) for jar in jars)
    assert "spark.jars.packages" not in conf


def test_local_jars_are_ignored_by_the_python_connector(tmp_path: Path) -> None:
    env = jars_env([tmp_path / "missing.jar"])

    conf = spark_conf(settings_with("python"), env=env)

    assert "spark.jars" not in conf


def test_a_missing_local_jar_is_named(tmp_path: Path) -> None:
    jars = connector_jars(tmp_path / "jars")
    missing = tmp_path / "elsewhere" / "kafka-clients-3.9.1.jar"

    with pytest.raises(ConnectorUnavailableError) as raised:
        spark_conf(settings_with("builtin"), env=jars_env([*jars[:2], missing, jars[3]]))

    assert str(missing) in str(raised.value)
    assert "SPARK_KAFKA_JARS" in str(raised.value)


@pytest.mark.parametrize("which", [0, 1], ids=["sql-kafka", "token-provider"])
def test_a_connector_of_another_spark_version_is_refused(tmp_path: Path, which: int) -> None:
    jars = connector_jars(tmp_path / "right")
    wrong = connector_jars(tmp_path / "wrong", version=OTHER_VERSION)[which]
    jars[which] = wrong

    with pytest.raises(ConnectorUnavailableError) as raised:
        spark_conf(settings_with("builtin"), env=jars_env(jars))

    message = str(raised.value)
    assert wrong.name in message
    assert f"version {OTHER_VERSION}" in message
    assert f"pyspark is {SPARK_VERSION}" in message
    assert "NoSuchMethodError" in message


def test_every_one_of_the_four_jars_is_required(tmp_path: Path) -> None:
    jars = connector_jars(tmp_path / "jars")

    with pytest.raises(ConnectorUnavailableError) as raised:
        spark_conf(settings_with("builtin"), env=jars_env([jars[0], jars[3]]))

    message = str(raised.value)
    assert f"spark-token-provider-kafka-0-10_2.13-{SPARK_VERSION}.jar" in message
    assert "kafka-clients-<version>.jar" in message
    assert "commons-pool2" in message


# --- Java -----------------------------------------------------------------------------------

OPENJDK_17 = """openjdk version "17.0.15" 2025-04-15
OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)
OpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, sharing)
"""
ORACLE_8 = """java version "1.8.0_402"
Java(TM) SE Runtime Environment (build 1.8.0_402-b11)
"""
OPENJDK_11 = 'openjdk version "11.0.22" 2024-01-16\n'


@pytest.mark.parametrize(
    ("output", "major"),
    [
        (OPENJDK_17, 17),
        (ORACLE_8, 8),
        (OPENJDK_11, 11),
        ('openjdk version "21" 2023-09-19\n', 21),
        ('openjdk version "25-ea" 2025-09-16\n', 25),
        ('Picked up JAVA_TOOL_OPTIONS: -Xmx2g\nopenjdk version "17.0.2"\n', 17),
        ("bash: java: command not found\n", None),
    ],
)
def test_parses_java_version_output(output: str, major: int | None) -> None:
    assert parse_java_version(output) == major


def fake_java(tmp_path: Path) -> Path:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    return home


def test_java_17_from_java_home_is_accepted(tmp_path: Path) -> None:
    home = fake_java(tmp_path)
    calls: list[list[str]] = []

    def run(command: Sequence[str]) -> tuple[int, str]:
        calls.append(list(command))
        return 0, OPENJDK_17

    assert check_java({"JAVA_HOME": str(home)}, run) == 17
    assert calls == [[str(home / "bin" / "java"), "-version"]]


@pytest.mark.parametrize(("output", "version"), [(ORACLE_8, "8"), (OPENJDK_11, "11")])
def test_java_older_than_17_is_refused(tmp_path: Path, output: str, version: str) -> None:
    home = fake_java(tmp_path)

    with pytest.raises(SparkEnvironmentError) as raised:
        check_java({"JAVA_HOME": str(home)}, lambda command: (0, output))

    message = str(raised.value)
    assert f"is Java {version} (" in message
    assert "Java 17 or later" in message
    assert "JAVA_HOME" in message


def test_java_home_without_java_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SparkEnvironmentError, match=r"JAVA_HOME=.* has no executable bin/java"):
        check_java({"JAVA_HOME": str(tmp_path)}, lambda command: (0, OPENJDK_17))


def test_no_java_at_all_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SparkEnvironmentError, match="java is not on PATH and JAVA_HOME is not"):
        check_java({"PATH": str(tmp_path)}, lambda command: (0, OPENJDK_17))


def test_java_on_path_that_fails_is_refused(tmp_path: Path) -> None:
    fake_java(tmp_path)
    env = {"PATH": str(tmp_path / "jdk" / "bin")}

    with pytest.raises(SparkEnvironmentError, match=r"-version` failed .*Error occurred"):
        check_java(env, lambda command: (1, "Error occurred during initialization of VM\n"))


def test_the_java_of_this_machine_is_good_enough() -> None:
    assert check_java() >= 17


# --- pyarrow --------------------------------------------------------------------------------


def test_pyarrow_is_importable_here() -> None:
    check_pyarrow(sys.executable)


def test_another_worker_interpreter_without_pyarrow_is_refused() -> None:
    def run(command: Sequence[str]) -> tuple[int, str]:
        assert command == ["/opt/other/bin/python", "-c", "import pyarrow"]
        return 1, "Traceback ...\nModuleNotFoundError: No module named 'pyarrow'\n"

    with pytest.raises(SparkEnvironmentError) as raised:
        check_pyarrow("/opt/other/bin/python", run)

    message = str(raised.value)
    assert "/opt/other/bin/python" in message
    assert "No module named 'pyarrow'" in message
    assert "pip install pyarrow" in message


# --- sessions of the CLI's commands -----------------------------------------------------------


@pytest.mark.parametrize(("reads_kafka", "connector"), [(True, "builtin"), (False, "python")])
def test_a_command_session_starts_on_first_use_once_locally(
    monkeypatch: pytest.MonkeyPatch, reads_kafka: bool, connector: str
) -> None:
    built = Built()
    monkeypatch.setattr(spark_session, "build_spark_session", built)
    settings = settings_with("builtin")
    factory = local_session_factory(settings, purpose="output", reads_kafka=reads_kafka)
    assert built.calls == []  # nothing starts until a session is needed
    assert factory() is factory()
    # A command that reads only files never asks Maven for the built-in connector's jars.
    assert built.calls == [
        (
            connector,
            f"{settings.pipeline.name}-output",
            "local[1]",
            {"spark.ui.showConsoleProgress": "false"},
        )
    ]
