"""deploy/: submit.sh assembles the spark-submit it should, and the Kubernetes manifest is
valid and says the same as submit.sh.

Both are checked without a cluster: submit.sh has a ``--dry-run`` that prints the command it
would run, and the manifest is checked against the part of the Spark operator's
SparkApplication schema (v1beta2) it uses, written out here from the operator's CRD, with
unknown fields refused so that a misspelt key fails instead of being ignored by the cluster.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pyspark_kafka_upgrade.testing import wait_until

PROJECT = Path(__file__).resolve().parents[1]
SUBMIT = PROJECT / "deploy" / "submit.sh"
MANIFEST = PROJECT / "deploy" / "kubernetes" / "sparkapplication.yaml"
CONNECTOR = "spark-sql-kafka-0-10_2.13"
# What a Delta sink adds to a session, as the library sets it when it starts Spark itself.
DELTA_CONFS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}
_COUNT = {"type": "integer", "minimum": 1}


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_ENV_VAR = _closed({"name": _STRING, "value": _STRING}, ("name",))
_MOUNT = _closed({"name": _STRING, "mountPath": _STRING}, ("name", "mountPath"))
_POD = {
    "cores": _COUNT,
    "memory": _STRING,
    "serviceAccount": _STRING,
    "env": {"type": "array", "items": _ENV_VAR},
    "volumeMounts": {"type": "array", "items": _MOUNT},
}
# The fields of sparkoperator.k8s.io/v1beta2 SparkApplication this project uses, with the
# operator's types, enums and required lists.
SPARK_APPLICATION_SCHEMA = _closed(
    {
        "apiVersion": {"const": "sparkoperator.k8s.io/v1beta2"},
        "kind": {"const": "SparkApplication"},
        "metadata": _closed({"name": _STRING, "namespace": _STRING}, ("name",)),
        "spec": _closed(
            {
                "type": {"enum": ["Java", "Python", "Scala", "R"]},
                "mode": {"enum": ["cluster", "client"]},
                "image": _STRING,
                "sparkVersion": _STRING,
                "mainApplicationFile": _STRING,
                "arguments": _STRINGS,
                "deps": _closed({"archives": _STRINGS, "packages": _STRINGS, "jars": _STRINGS}),
                "sparkConf": {"type": "object", "additionalProperties": _STRING},
                "volumes": {
                    "type": "array",
                    "items": _closed(
                        {"name": _STRING, "configMap": _closed({"name": _STRING}, ("name",))},
                        ("name",),
                    ),
                },
                "driver": _closed(_POD),
                "executor": _closed({**_POD, "instances": _COUNT}),
                "restartPolicy": _closed(
                    {
                        "type": {"enum": ["Never", "Always", "OnFailure"]},
                        "onFailureRetryInterval": _COUNT,
                        "onSubmissionFailureRetryInterval": _COUNT,
                    }
                ),
            },
            ("driver", "executor", "mainApplicationFile", "sparkVersion", "type"),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)


def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    """A dist/ with the files submit.sh looks for (a dry run never opens them)."""
    directory = tmp_path / "dist"
    directory.mkdir()
    for name in ("main.py", "environment.tar.gz"):
        (directory / name).write_bytes(b"")
    return directory


@pytest.fixture
def fake_submit(tmp_path: Path) -> Path:
    """An executable in spark-submit's place: a dry run must not start it."""
    path = tmp_path / "spark-submit"
    path.write_text("#!/bin/sh\necho started >&2\nexit 99\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def submit(
    *args: str, dist: Path, spark_submit: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    ignored = ("SPARK_KAFKA_JARS", "SPARK_DELTA_JARS", "SPARK_HOME", "SPARK_VERSION")
    clean = {k: v for k, v in os.environ.items() if k not in ignored}
    return subprocess.run(
        [str(SUBMIT), *args],
        env={**clean, "DIST_DIR": str(dist), "SPARK_SUBMIT": str(spark_submit), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def dry_run(*args: str, dist: Path, spark_submit: Path, **env: str) -> list[str]:
    done = submit("--dry-run", *args, dist=dist, spark_submit=spark_submit, env=env)
    assert done.returncode == 0, done.stderr
    return shlex.split(done.stdout)


def options(words: list[str], name: str) -> list[str]:
    """Every value given to ``name`` in a spark-submit command line."""
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == name]


def listed(words: list[str], name: str) -> list[str]:
    """The items of the comma-separated list given to ``name`` (--jars, --packages); once at
    most, since spark-submit keeps only the last."""
    values = options(words, name)
    assert len(values) <= 1, f"{name} given {len(values)} times: spark-submit keeps the last"
    return values[0].split(",") if values else []


def test_the_manifest_is_a_valid_spark_application() -> None:
    jsonschema.validate(manifest(), SPARK_APPLICATION_SCHEMA)


@pytest.mark.parametrize(
    ("path", "value", "complaint"),
    [
        (("spec", "mode"), "clutser", "is not one of"),
        (("spec", "executor", "instances"), "2", "is not of type 'integer'"),
        (("spec", "sparkconf"), {}, "Additional properties are not allowed"),
    ],
)
def test_the_schema_refuses_what_the_operator_would(
    path: tuple[str, ...], value: object, complaint: str
) -> None:
    # The check must be able to fail: each broken copy is refused, with the reason.
    broken = manifest()
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError, match=complaint):
        jsonschema.validate(broken, SPARK_APPLICATION_SCHEMA)


def test_the_manifest_and_submit_sh_agree(dist: Path, fake_submit: Path) -> None:
    spec = manifest()["spec"]
    words = dry_run(
        "--master=k8s://https://kubernetes.example",
        dist=dist,
        spark_submit=fake_submit,
        SPARK_VERSION=spec["sparkVersion"],
    )
    driver_env = dict(word.split("=", 1) for word in words[: words.index(str(fake_submit))])
    main = words.index(str(dist / "main.py"))
    assert manifest()["metadata"]["name"] == options(words, "--name")[0]
    assert Path(spec["mainApplicationFile"]).name == "main.py"
    assert [Path(a).name for a in spec["deps"]["archives"]] == [
        Path(a).name for a in options(words, "--archives")
    ]
    assert spec["sparkConf"] == dict(conf.split("=", 1) for conf in options(words, "--conf"))
    assert spec["deps"].get("packages", []) == listed(words, "--packages")
    assert {e["name"]: e["value"] for e in spec["driver"]["env"]} == {
        "PYSPARK_PYTHON": driver_env["PYSPARK_PYTHON"]
    }
    # The manifest runs what submit.sh runs by default, with its settings from the ConfigMap.
    assert spec["arguments"][-len(words[main + 1 :]) :] == words[main + 1 :] == ["run"]
    config = spec["arguments"][spec["arguments"].index("--config") + 1]
    mounts = [m["mountPath"] for m in spec["driver"]["volumeMounts"]]
    assert str(Path(config).parent) in mounts


def test_the_manifest_runs_the_spark_this_project_is_tested_with() -> None:
    pins = dict(
        line.split("==", 1)
        for line in (PROJECT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line and not line.startswith("#")
    )
    spec = manifest()["spec"]
    assert spec["sparkVersion"] == pins["pyspark"]
    assert spec["image"].startswith(f"apache/spark:{pins['pyspark']}")
    for package in spec["deps"].get("packages", []):
        if CONNECTOR in package:
            assert package == f"org.apache.spark:{CONNECTOR}:{pins['pyspark']}"
        else:  # the Delta build submit.sh names for that Spark (the agreement test above)
            assert package.startswith("io.delta:delta-spark_"), package


def test_the_builtin_connector_ships_listed_jars_or_asks_for_the_package(
    dist: Path, fake_submit: Path
) -> None:
    jars = "/jars/a.jar,/jars/b.jar"
    # A file sink: the Kafka connector alone (Delta's own tests are below).
    with_jars = dry_run(
        "--master=yarn",
        "--connector=builtin",
        "--sink=parquet",
        dist=dist,
        spark_submit=fake_submit,
        SPARK_KAFKA_JARS=jars,
    )
    with_package = dry_run(
        "--master=yarn", "--connector=builtin", "--sink=parquet", dist=dist,
        spark_submit=fake_submit, SPARK_VERSION="4.1.1",
    )  # fmt: skip
    python = dry_run(
        "--master=yarn", "--connector=python", "--sink=parquet", dist=dist,
        spark_submit=fake_submit,
    )  # fmt: skip
    unknown = submit(
        "--dry-run", "--master=yarn", "--connector=builtin", "--sink=parquet", dist=dist,
        spark_submit=fake_submit,
    )  # fmt: skip

    assert options(with_jars, "--jars") == [jars]
    assert options(with_jars, "--packages") == []
    assert options(with_package, "--packages") == [f"org.apache.spark:{CONNECTOR}:4.1.1"]
    assert options(python, "--packages") == options(python, "--jars") == []
    # The fake spark-submit prints no version: said in one line, nothing submitted.
    assert unknown.returncode == 2
    assert "cannot tell the Spark version from" in unknown.stderr
    assert "set SPARK_VERSION" in unknown.stderr


@pytest.mark.parametrize(
    ("spark", "delta"),
    [
        ("4.0.0", "io.delta:delta-spark_2.13:4.0.0"),
        ("4.2.1", "io.delta:delta-spark_4.2_2.13:4.4.0"),
    ],
)
def test_a_delta_sink_adds_deltas_build_for_the_spark_line_and_its_session_confs(
    dist: Path, fake_submit: Path, spark: str, delta: str
) -> None:
    words = dry_run(
        "--master=yarn", "--connector=builtin", "--sink=delta",
        "--conf", "spark.sql.extensions=mine",
        dist=dist, spark_submit=fake_submit, SPARK_VERSION=spark,
    )  # fmt: skip
    confs = [conf.split("=", 1) for conf in options(words, "--conf")]

    assert listed(words, "--packages") == [f"org.apache.spark:{CONNECTOR}:{spark}", delta]
    assert options(words, "--jars") == []
    assert {key: value for key, value in confs if key in DELTA_CONFS} == {
        **DELTA_CONFS,
        "spark.sql.extensions": "mine",  # the caller's own --conf comes last, and wins
    }
    assert [key for key, _ in confs].count("spark.sql.extensions") == 2


def test_delta_jars_listed_go_with_the_connectors_in_one_jars_option(
    dist: Path, fake_submit: Path
) -> None:
    words = dry_run(
        "--master=yarn", "--connector=builtin", "--sink=delta",
        dist=dist, spark_submit=fake_submit,
        SPARK_KAFKA_JARS="/k/a.jar,/k/b.jar", SPARK_DELTA_JARS="/d/delta-spark.jar",
    )  # fmt: skip

    assert listed(words, "--jars") == ["/k/a.jar", "/k/b.jar", "/d/delta-spark.jar"]
    assert options(words, "--packages") == []


@pytest.mark.parametrize("sink", ["parquet", "orc"])
def test_a_file_sink_adds_nothing_of_delta(dist: Path, fake_submit: Path, sink: str) -> None:
    words = dry_run(
        "--master=yarn", "--connector=python", f"--sink={sink}",
        dist=dist, spark_submit=fake_submit, SPARK_DELTA_JARS="/d/delta-spark.jar",
    )  # fmt: skip

    assert options(words, "--jars") == options(words, "--packages") == []
    assert not [conf for conf in options(words, "--conf") if conf.split("=")[0] in DELTA_CONFS]


def test_a_spark_line_without_a_known_delta_build_is_refused_in_one_line(
    dist: Path, fake_submit: Path
) -> None:
    done = submit(
        "--dry-run", "--master=yarn", "--sink=delta",
        dist=dist, spark_submit=fake_submit, env={"SPARK_VERSION": "4.1.1"},
    )  # fmt: skip

    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "submit.sh: no Delta Lake build is known for Spark 4.1.1 (known: 4.0.x, 4.2.x): "
        "set SPARK_DELTA_JARS\n"
    )


def test_the_pipeline_arguments_and_confs_pass_through_in_client_mode(
    dist: Path, fake_submit: Path
) -> None:
    words = dry_run(
        "--master", "spark://spark-master:7077", "--conf", "spark.executor.memory=4g",
        "--", "--config", "my settings.toml", "upgrade", "plan",
        dist=dist, spark_submit=fake_submit, SPARK_VERSION="4.2.0",
    )  # fmt: skip

    assert options(words, "--master") == ["spark://spark-master:7077"]
    assert options(words, "--deploy-mode") == ["client"]
    assert "spark.executor.memory=4g" in options(words, "--conf")
    assert options(words, "--archives") == [f"{dist}/environment.tar.gz#environment"]
    main = words.index(str(dist / "main.py"))
    assert words[main + 1 :] == ["--config", "my settings.toml", "upgrade", "plan"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "--master is required"),
        (("--master=yarn", "--connector=jdbc"), "--connector is builtin or python, not jdbc"),
        (("--master=yarn", "--sink=csv"), "--sink is delta, parquet or orc, not csv"),
        (("--master=yarn", "run"), "unknown option run (the pipeline's own arguments go after --"),
    ],
)
def test_a_wrong_command_line_is_refused_in_one_line(
    dist: Path, fake_submit: Path, args: tuple[str, ...], message: str
) -> None:
    done = submit(*args, dist=dist, spark_submit=fake_submit)

    assert done.returncode == 2
    assert done.stderr.startswith(f"submit.sh: {message}")
    assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_without_the_bundle_it_says_to_build_it(tmp_path: Path, fake_submit: Path) -> None:
    done = submit("--master=yarn", dist=tmp_path / "nothing", spark_submit=fake_submit)

    assert done.returncode == 2
    assert "environment.tar.gz is missing: run `make package` first" in done.stderr
    assert "started" not in done.stderr


def test_help_teaches_with_an_example(dist: Path, fake_submit: Path) -> None:
    done = submit("--help", dist=dist, spark_submit=fake_submit)

    assert done.returncode == 0
    assert "deploy/submit.sh --master spark://spark-master:7077 -- --config pipeline.toml run" in (
        done.stdout
    )
    assert "set -euo" not in done.stdout


# The driver's side, run for real with a stand-in spark-submit: it runs dist/main.py with
# the Python it is given, as spark-submit's JVM does, and ignores nothing it is sent.
STAND_IN_SUBMIT = """#!/usr/bin/env bash
trap 'echo "spark-submit got $1" >>"$SUBMIT_LOG"' TERM INT
for arg in "$@"; do main=$arg; [[ $arg == */main.py ]] && break; done
"$PYSPARK_DRIVER_PYTHON" "$main" &
wait $!
status=$?
echo "driver exited $status" >>"$SUBMIT_LOG"
exit $status
"""
# The stand-in driver: stops cleanly on SIGTERM or SIGINT, as the pipeline's `run` does.
STAND_IN_MAIN = """import pathlib, signal, sys, time
log = pathlib.Path(sys.argv[0]).with_name("driver.log")
def stop(signum, frame):
    log.write_text(f"stopped on {signal.Signals(signum).name}")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
log.write_text("running")
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    time.sleep(0.05)
sys.exit(7)
"""


def stand_in_bundle(directory: Path, marker: str) -> Path:
    """A dist/ whose archive holds ./bin/python (this interpreter) and a marker file."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "main.py").write_text(STAND_IN_MAIN)
    content = directory / "content"
    shutil.rmtree(content, ignore_errors=True)
    (content / "bin").mkdir(parents=True)
    (content / "bin" / "python").symlink_to(sys.executable)
    (content / "marker").write_text(marker)
    with tarfile.open(directory / "environment.tar.gz", "w:gz") as archive:
        archive.add(content / "bin", arcname="bin")
        archive.add(content / "marker", arcname="marker")
    return directory


@pytest.fixture
def stand_in_submit(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "spark-submit"
    path.parent.mkdir()
    path.write_text(STAND_IN_SUBMIT)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def default_sigint() -> None:
    # A shell started in the background (`make test &`, a CI runner's script) passes SIGINT
    # on ignored, and a shell cannot trap a signal ignored when it started: as a terminal
    # would, submit.sh starts with SIGINT's default action.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(dist: Path, submit: Path, cwd: Path, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(SUBMIT), "--master=local[1]", "--connector=python", "--sink=parquet", "--", "run"],
        cwd=cwd,
        env={
            **os.environ,
            "DIST_DIR": str(dist),
            "SPARK_SUBMIT": str(submit),
            "SUBMIT_LOG": str(log),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_a_signal_to_submit_sh_reaches_the_driver_not_spark_submit(
    tmp_path: Path, stand_in_submit: Path, signal_name: str
) -> None:
    dist = stand_in_bundle(tmp_path / "dist", "one")
    log = tmp_path / "submit.log"
    process = start(dist, stand_in_submit, tmp_path, log)
    try:
        wait_until(
            lambda: (dist / "driver.log").is_file() or process.poll() is not None,
            timeout=30,
            message="the stand-in driver never started",
        )
        process.send_signal(getattr(signal, signal_name))
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    # The driver stopped on the signal and exited 0; spark-submit was never signalled.
    assert (dist / "driver.log").read_text() == f"stopped on {signal_name}", stderr
    assert log.read_text() == "driver exited 0\n"
    assert process.returncode == 0


def test_the_drivers_environment_is_unpacked_once_per_archive(
    tmp_path: Path, stand_in_submit: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()

    def submit_once(marker: str) -> str:
        dist = tmp_path / f"dist-{marker}"
        if not dist.exists():
            stand_in_bundle(dist, marker)
            (dist / "main.py").write_text("import sys; sys.exit(0)\n")
        done = start(dist, stand_in_submit, work, tmp_path / "submit.log")
        _, stderr = done.communicate(timeout=60)
        assert done.returncode == 0, stderr
        return stderr

    first = submit_once("one")
    again = submit_once("one")
    other = submit_once("two")

    assert "unpacking" in first and "unpacking" not in again and "unpacking" in other
    # The same archive again is the same environment; another archive replaces it.
    assert (work / "environment" / "marker").read_text() == "two"
    assert sorted(p.name for p in work.iterdir()) == ["environment"]


def test_an_environment_it_did_not_unpack_is_left_alone(
    tmp_path: Path, stand_in_submit: Path
) -> None:
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "mine").write_text("kept")
    dist = stand_in_bundle(tmp_path / "dist", "one")

    done = start(dist, stand_in_submit, tmp_path, tmp_path / "submit.log")
    _, stderr = done.communicate(timeout=60)

    assert done.returncode == 2
    assert stderr.startswith(f"submit.sh: {tmp_path}/environment was not unpacked by submit.sh")
    assert (tmp_path / "environment" / "mine").read_text() == "kept"
