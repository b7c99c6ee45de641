"""Spark's built-in Kafka connector: refused clearly where it cannot load, and reading exactly
what the pip-only source reads where it can.

Every SparkSession here starts in a child process (this file, run as a script). Jars are
fixed when a process's first SparkContext starts, so these sessions, with and without the
connector's jars, must not share a process with each other or with the suite's session.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyspark
import pytest

import pyspark_kafka_upgrade.testing._spark

# A straight import sorts before the package's from-imports whatever the package is named.
import support.fake_repository as fake_repository
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.kafka.connector import (
    read_kafka_stream,
)
from pyspark_kafka_upgrade._adapters.spark.session import (
    build_spark_session,
)
from pyspark_kafka_upgrade._core.settings import (
    load_settings,
)
from pyspark_kafka_upgrade._domain.errors import (
    PipelineError,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT

pytestmark = pytest.mark.integration

PROJECT_DIR = Path(__file__).resolve().parents[2]
# Spark 4.2 passes read limits to Python sources, so "available now" honours a rate limit.
AVAILABLE_NOW_HONOURS_LIMITS = tuple(map(int, pyspark.__version__.split(".")[:2])) >= (4, 2)
SPARK_VERSION = pyspark.__version__
RESULT_PREFIX = "CHILD-RESULT "
# The advice every refusal must give, whichever way the connector could not be loaded.
ADVICE_PARTS = ("mvn", "connector fetch", "SPARK_KAFKA_JARS", 'kafka.connector = "python"')
PARTITIONS = 3
RECORD_COUNT = 40
BASE_TIMESTAMP_MS = int(datetime(2021, 6, 1, 8, 0, tzinfo=UTC).timestamp() * 1000)
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


# --------------------------------------------------------------------------------------------
# Where the connector cannot be loaded
# --------------------------------------------------------------------------------------------


@pytest.fixture
def empty_repository() -> Iterator[str]:
    with fake_repository.empty_maven_repository() as url:
        yield url


def test_no_maven_is_refused_before_spark_starts(tmp_path: Path) -> None:
    env = {"MVN": "", "JAR_CACHE_DIR": str(tmp_path / "cache")}

    result = run_child(["start"], tmp_path, env=env, timeout=120)

    assert result["error"] == "ConnectorUnavailableError", result
    message = result["message"]
    assert f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}" in message
    assert "no `mvn` on PATH" in message
    for part in ADVICE_PARTS:
        assert part in message
    assert "\n" not in message
    assert result["seconds"] < 10


def test_a_repository_without_the_connector_is_refused_with_mavens_reason(
    empty_repository: str, tmp_path: Path
) -> None:
    # The real mvn, with a user settings file whose mirror is an empty repository on
    # 127.0.0.1 and an empty local repository: Maven itself fails to resolve.
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(
        "<settings><mirrors><mirror><id>empty</id><mirrorOf>*</mirrorOf>"
        f"<url>{empty_repository}</url></mirror></mirrors></settings>\n"
    )
    # Maven finds settings and its local repository below the JVM's user.home, not $HOME.
    env = {"MAVEN_OPTS": f"-Duser.home={home}", "JAR_CACHE_DIR": str(tmp_path / "cache")}

    result = run_child(["start"], tmp_path, env=env, timeout=300)

    assert result["error"] == "ConnectorUnavailableError", result
    message = result["message"]
    assert f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}" in message
    assert "dependency:copy-dependencies" in message  # the command that was tried
    assert "exited 1" in message
    for part in ADVICE_PARTS:
        assert part in message
    assert not list((tmp_path / "cache").glob("*/jars.txt")), "a failed resolution was cached"


def test_local_jars_without_the_connector_classes_are_refused(tmp_path: Path) -> None:
    # Named like the four jars, so every check on names and versions passes; only loading
    # the provider class can tell that they hold nothing.
    names = [
        f"spark-sql-kafka-0-10_2.13-{SPARK_VERSION}.jar",
        f"spark-token-provider-kafka-0-10_2.13-{SPARK_VERSION}.jar",
        "kafka-clients-3.9.1.jar",
        "commons-pool2-2.12.1.jar",
    ]
    jars = [tmp_path / "jars" / name for name in names]
    jars[0].parent.mkdir()
    for jar in jars:
        write_empty_jar(jar)
    env = {"SPARK_KAFKA_JARS": ",".join(map(str, jars))}

    result = run_child(["start"], tmp_path, env=env, timeout=180)

    assert result["error"] == "ConnectorUnavailableError", result
    message = result["message"]
    assert "org.apache.spark.sql.kafka010.KafkaSourceProvider is not loadable" in message
    assert names[0] in message
    for part in ADVICE_PARTS:
        assert part in message
    assert result["seconds"] < 60


def write_empty_jar(path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")


# --------------------------------------------------------------------------------------------
# Where it can: both connectors read the same DataFrame
# --------------------------------------------------------------------------------------------


# (name, startingOffsets per partition or None for the settings' earliest, maxOffsetsPerTrigger)
SCENARIOS: list[tuple[str, dict[int, int] | None, int]] = [
    ("earliest in batches of 7", None, 7),
    ("exact offsets", {0: 2, 1: -2, 2: 5}, 0),
]


def make_records() -> list[testing.Record]:
    records = []
    for i in range(RECORD_COUNT):
        # 17 is coprime to 40: timestamps are a permutation, out of order within partitions.
        timestamp_ms = BASE_TIMESTAMP_MS + ((i * 17) % RECORD_COUNT) * 1_000 + i
        key = None if i % 9 == 4 else f"article-{i % 5}".encode()
        value = None if i == 23 else json.dumps({"n": i}).encode()
        records.append(testing.Record(i % PARTITIONS, key, value, timestamp_ms))
    return records


def expected_rows(
    topic: str, records: Sequence[testing.Record], start: Mapping[int, int]
) -> list[Any]:
    next_offset = dict.fromkeys(range(PARTITIONS), 0)
    rows = []
    for record in records:
        offset = next_offset[record.partition]
        next_offset[record.partition] += 1
        if offset < start.get(record.partition, 0):
            continue
        timestamp = datetime.fromtimestamp(record.timestamp_ms / 1000, UTC).replace(tzinfo=None)
        rows.append(
            {
                "key": record.key.hex() if record.key is not None else None,
                "value": record.value.hex() if record.value is not None else None,
                "topic": topic,
                "partition": record.partition,
                "offset": offset,
                "timestamp": timestamp.isoformat(),
                # Spark's column holds Kafka's TimestampType id: 0 is CreateTime.
                "timestampType": 0,
            }
        )
    return sorted(rows, key=lambda row: (row["partition"], row["offset"]))


def test_both_connectors_read_identical_dataframes(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    pyspark_kafka_upgrade.testing._spark.skip_unless_builtin_jars_can_be_had()
    # Requested only now, so that a skipped comparison starts no broker.
    backend: testing.KafkaBackend = request.getfixturevalue("kafka_backend")
    topic = testing.unique_topic("connector-parity")
    records = make_records()
    testing.create_topic(backend.bootstrap_servers, topic, PARTITIONS)
    testing.produce(backend.bootstrap_servers, topic, records)

    result = run_child(
        ["compare", backend.bootstrap_servers, topic, str(tmp_path / "work")],
        tmp_path,
        timeout=900,
    )

    assert result["error"] is None, result
    assert list(result["scenarios"]) == [name for name, _, _ in SCENARIOS]
    for name, start, _ in SCENARIOS:
        read = result["scenarios"][name]
        # -2 in JSON offsets means earliest, which is offset 0 here.
        first = {partition: max(offset, 0) for partition, offset in (start or {}).items()}
        expected = expected_rows(topic, records, first)
        assert read["python"]["schema"] == read["builtin"]["schema"], name
        assert read["python"]["rows"] == read["builtin"]["rows"], name
        assert read["builtin"]["rows"] == expected, name


# --------------------------------------------------------------------------------------------
# The child process
# --------------------------------------------------------------------------------------------


def run_child(
    args: list[str], cwd: Path, *, env: Mapping[str, str] | None = None, timeout: float
) -> dict[str, Any]:
    """Run this file as a script and return the result it printed.

    ``SPARK_KAFKA_JARS`` is passed on only to the comparison, so a test that wants the
    connector unavailable cannot be undone by the caller's environment.
    """
    child_env = {k: v for k, v in os.environ.items() if k != "SPARK_KAFKA_JARS"}
    if args[0] == "compare" and "SPARK_KAFKA_JARS" in os.environ:
        child_env["SPARK_KAFKA_JARS"] = os.environ["SPARK_KAFKA_JARS"]
    child_env.update(env or {})
    paths = [str(PROJECT_DIR / "src"), str(PROJECT_DIR / "tests"), child_env.get("PYTHONPATH", "")]
    child_env["PYTHONPATH"] = os.pathsep.join(path for path in paths if path)
    # Python turns timestamps into naive datetimes in the local zone; make that UTC.
    child_env["TZ"] = "UTC"
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, __file__, *args],
        cwd=cwd,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if completed.returncode != 0 or not lines:
        pytest.fail(
            f"child {args[0]} exited {completed.returncode} after "
            f"{time.monotonic() - started:.1f}s without a result\n"
            f"--- stdout ---\n{completed.stdout[-4000:]}\n"
            f"--- stderr ---\n{completed.stderr[-8000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1].removeprefix(RESULT_PREFIX))
    return result


def _report(result: Mapping[str, Any]) -> None:
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def _child_start() -> None:
    settings = load_settings(PROJECT, env={}, overrides=["kafka.connector=builtin"]).settings
    started = time.monotonic()
    try:
        spark = build_spark_session(
            settings,
            app_name="builtin-connector-check",
            master="local[1]",
            extra_conf=SPARK_CONF,
        )
    except PipelineError as error:
        seconds = time.monotonic() - started
        _report({"error": type(error).__name__, "message": str(error), "seconds": seconds})
        return
    spark.stop()
    _report({"error": None, "message": "", "seconds": time.monotonic() - started})


def _child_compare(bootstrap: str, topic: str, work: str) -> None:
    overrides = [
        f"kafka.bootstrap_servers={bootstrap}",
        f"kafka.topics={topic}",
        # The session gets the built-in's jars; the Python source needs none.
        "kafka.connector=builtin",
    ]
    settings = load_settings(PROJECT, env={}, overrides=overrides).settings
    spark = build_spark_session(
        settings, app_name="connector-parity", master="local[2]", extra_conf=SPARK_CONF
    )
    scenarios: dict[str, dict[str, Any]] = {}
    for name, start, max_per_trigger in SCENARIOS:
        scenarios[name] = {}
        for connector in ("python", "builtin"):
            kafka = dataclasses.replace(
                settings.kafka, connector=connector, max_offsets_per_trigger=max_per_trigger
            )
            label = f"{len(scenarios)}_{connector}"
            exact = None if start is None else {topic: {str(p): o for p, o in start.items()}}
            frame = read_kafka_stream(
                spark,
                kafka,
                starting_offsets=None if exact is None else json.dumps(exact),
                initial_offsets_location=f"{work}/{label}/initial-offsets",
            )
            writer = (
                frame.writeStream.format("memory")
                .queryName(f"parity_{label}")
                .option("checkpointLocation", f"{work}/{label}/checkpoint")
            )
            if AVAILABLE_NOW_HONOURS_LIMITS:
                query = writer.trigger(availableNow=True).start()
                query.awaitTermination(600)
            else:
                # Before Spark 4.2 a Python source's "available now" is one batch, which a
                # rate limit cuts short (README, "Versions"): read until caught up instead.
                query = writer.trigger(processingTime="0 seconds").start()
                query.processAllAvailable()
                query.stop()
            if query.exception() is not None:
                raise RuntimeError(f"{name}, {connector}: {query.exception()}")
            rows = spark.table(f"parity_{label}").orderBy("partition", "offset").collect()
            scenarios[name][connector] = {
                "schema": frame.schema.jsonValue(),
                "rows": [{k: _plain(v) for k, v in row.asDict().items()} for row in rows],
            }
    spark.stop()
    _report({"error": None, "scenarios": scenarios})


def _plain(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _child(args: list[str]) -> int:
    if args[0] == "start":
        _child_start()
    elif args[0] == "compare":
        _child_compare(args[1], args[2], args[3])
    else:
        raise SystemExit(f"unknown child command {args[0]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
