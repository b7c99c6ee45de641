"""The packaged job on a real Spark standalone cluster: `make package`, then deploy/submit.sh.

Version 1 is submitted in client mode against real Kafka and stops once caught up; version 2
is refused on the old checkpoint; `upgrade plan` and `upgrade apply` run on this machine, as
an operator's would; version 2 is submitted and the result is checked against a count of
every event produced (the demo's check): nothing lost, nothing written twice. The executors
run the environment archive's Python, unpacked by the worker, not this test's virtualenv.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import pyspark_kafka_upgrade.testing.driver_process as driver_process
import pyspark_kafka_upgrade.testing.kafka_backends as kafka
import pyspark_kafka_upgrade.testing.spark
import pyspark_kafka_upgrade.testing.spark_cluster as spark_cluster
import support.pipelines as pipelines
from pyspark_kafka_upgrade.checkpoint.reader import (
    read_checkpoint,
)
from pyspark_kafka_upgrade.example.pipeline import PROJECT
from pyspark_kafka_upgrade.spark.kafka_jars import (
    SPARK_KAFKA_JARS,
    fetch_connector_jars,
)
from pyspark_kafka_upgrade.values.layout import (
    GenerationLayout,
)

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

PROJECT_DIR = Path(__file__).resolve().parents[2]
DEMO = PROJECT_DIR / "demo" / "upgrade_demo.py"
SUBMIT = PROJECT_DIR / "deploy" / "submit.sh"
PACKAGE_TIMEOUT_S = 600
DEMO_TIMEOUT_S = 1200
FIRST_BATCHES_TIMEOUT_S = 300
STOP_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """dist/ as `make package` builds it, into a directory of this module's own."""
    dist = tmp_path_factory.mktemp("dist")
    # VENV: this test's environment, and -o install: it is installed already and must not
    # change under the running tests.
    command = ["make", "--no-print-directory", "-o", "install", "package"]
    command += [f"DIST_DIR={dist}", f"VENV={sys.prefix}"]
    finished = subprocess.run(
        command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=PACKAGE_TIMEOUT_S
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    yield dist
    shutil.rmtree(dist, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[spark_cluster.SparkCluster]:
    directory = tmp_path_factory.mktemp("cluster")
    try:
        with spark_cluster.standalone_cluster(directory) as running:
            yield running
        # Every daemon, executor and driver that named this cluster's directories is gone.
        assert spark_cluster.processes_of(directory) == []
    finally:
        # The worker keeps every application's unpacked archive: hundreds of MB per run.
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def submit_env(
    cluster: spark_cluster.SparkCluster, bundle: Path, kafka_backend: kafka.KafkaBackend
) -> dict[str, str]:
    """What a driver on this machine needs: the cluster's loopback settings and the bundle."""
    connector = pyspark_kafka_upgrade.testing.spark.connector_under_test(PROJECT)
    if connector == "builtin":
        pyspark_kafka_upgrade.testing.spark.skip_unless_builtin_jars_can_be_had()
    env = {**cluster.env, "KAFKA_BOOTSTRAP_SERVERS": kafka_backend.bootstrap_servers}
    env["DIST_DIR"] = str(bundle)
    env.pop("KAFKA_BACKEND", None)  # the demo takes the broker this session runs
    # The spark-submit of this test's pyspark, and no SPARK_HOME: submit.sh finds Spark as
    # it does for a user of `make install`.
    env.pop("SPARK_HOME", None)
    env["SPARK_SUBMIT"] = str(Path(sys.prefix) / "bin" / "spark-submit")
    if connector == "builtin":
        # spark-submit ships the jars with --jars; nothing asks a repository.
        env[SPARK_KAFKA_JARS] = ",".join(fetch_connector_jars())
    return env


def test_the_bundle_holds_the_wheel_its_environment_without_pyspark_and_the_entry(
    bundle: Path,
) -> None:
    names = {path.name for path in bundle.iterdir()}
    wheels = {name for name in names if name.endswith("-py3-none-any.whl")}
    assert len(wheels) == 1 and names - wheels == {"environment.tar.gz", "main.py"}, names
    with tarfile.open(bundle / "environment.tar.gz") as archive:
        # lib/python3.X/site-packages/<name>/...: the top-level names installed.
        packages = {
            parts[3]
            for parts in (Path(member).parts for member in archive.getnames())
            if len(parts) > 3 and parts[0] == "lib" and parts[2] == "site-packages"
        }
    # The platform brings Spark: a copy in the archive would shadow the cluster's own.
    assert not any(name == "pyspark" or name.startswith("pyspark-") for name in packages)
    assert {"pyarrow", "confluent_kafka", "pyspark_kafka_upgrade"} <= packages, sorted(packages)


def test_version_1_then_the_upgrade_then_version_2_on_a_standalone_cluster(
    cluster: spark_cluster.SparkCluster, submit_env: dict[str, str], tmp_path: Path
) -> None:
    connector = pyspark_kafka_upgrade.testing.spark.connector_under_test(PROJECT)
    work = tmp_path / "demo"
    before = set(cluster.worker_dir.iterdir())
    demo = [sys.executable, str(DEMO), "--dir", str(work), "--connector", connector]
    demo += ["--submit", cluster.master_url]
    demo += [f"--submit-conf={conf}" for conf in cluster.driver_confs]
    try:
        finished = _run_in_own_group(demo, submit_env, timeout=DEMO_TIMEOUT_S)
        applications = sorted(set(cluster.worker_dir.iterdir()) - before)
    finally:
        shutil.rmtree(work / "environment", ignore_errors=True)
    shown = finished.stdout + finished.stderr[-3000:]
    assert finished.returncode == 0, shown
    assert "  windows written twice:           0\n" in finished.stdout, shown
    assert "  OK: no event lost, no window written twice.\n" in finished.stdout, shown
    # Three submissions (version 1, version 2 refused, version 2): three applications on
    # the worker, each with an executor that ran the Python of the unpacked archive.
    assert len(applications) == 3, applications
    for application in applications:
        assert (application / "0" / "environment" / "bin" / "python").exists(), application
    # The refusal crossed spark-submit with its exit code.
    assert "  (exit 3, " in finished.stdout, shown
    # Plan and apply ran on this machine, with the package's own CLI.
    assert "$ pyspark_kafka_upgrade --config version-2.toml upgrade apply" in finished.stdout


def test_sigterm_to_submit_sh_lets_the_batch_in_flight_commit(
    cluster: spark_cluster.SparkCluster, submit_env: dict[str, str], tmp_path: Path
) -> None:
    # The runbook's pause: a signal to submit.sh reaches the Python driver, which stops
    # after the batch in flight, where spark-submit's JVM would stop the SparkContext.
    bootstrap = submit_env["KAFKA_BOOTSTRAP_SERVERS"]
    topic = kafka.unique_topic("cluster-pause")
    kafka.create_topic(bootstrap, topic, 2)
    times = [pipelines.BASE_MS + i * pipelines.MINUTE_MS for i in range(60)]
    kafka.produce(bootstrap, topic, pipelines.page_views(["a1"], times, partitions=2))
    overrides = pipelines.pipeline_overrides(
        tmp_path, bootstrap, topic, "kafka.max_offsets_per_trigger=4"
    )
    command = [str(SUBMIT), f"--master={cluster.master_url}"]
    command += [f"--conf={conf}" for conf in cluster.driver_confs]
    command += [
        f"--connector={pyspark_kafka_upgrade.testing.spark.connector_under_test(PROJECT)}",
        "--",
    ]
    command += [*(f"--set={override}" for override in overrides), "run"]
    try:
        stopped = driver_process.sigterm_after_second_batch(
            command,  # to submit.sh, as an operator would
            cwd=tmp_path,
            env=submit_env,
            start_timeout=FIRST_BATCHES_TIMEOUT_S,
            stop_timeout=STOP_TIMEOUT_S,
        )
    finally:
        shutil.rmtree(tmp_path / "environment", ignore_errors=True)
    returncode, before_signal, output = stopped.returncode, stopped.before_signal, stopped.output

    assert returncode == 0, output
    assert "SIGTERM: stopping after the batches in flight" in output
    assert "stopped (stop request)" in output.splitlines()[-1]
    state = read_checkpoint(GenerationLayout(str(tmp_path / "pipeline"), 1).checkpoint)
    reported = [int(line.split()[1]) for line in before_signal if "  aggregates  " in line]
    assert state.last_committed_batch is not None
    assert state.last_committed_batch >= max(reported)
    assert f"committed aggregates to batch {state.last_committed_batch}" in output


def _run_in_own_group(
    command: list[str], env: dict[str, str], *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command``; on a timeout, kill it with every driver and JVM it started."""
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
