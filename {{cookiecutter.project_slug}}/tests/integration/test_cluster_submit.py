"""This project's deployment on a real Spark standalone cluster: `make package`, then
deploy/submit.sh for every `run`, while `upgrade plan` and `upgrade apply` run on this
machine, as an operator's would. The executors run the archive's Python, not this one."""

from __future__ import annotations

{% if cookiecutter.sink_format == "delta" %}import json
{% endif %}import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark_kafka_upgrade import GenerationLayout, Project
from pyspark_kafka_upgrade.testing import (
    SPARK_KAFKA_JARS,
    KafkaBackend,
    Record,
    SparkCluster,
    connector_under_test,
    create_topic,
    fetch_connector_jars,
    processes_of,
    produce,
    read_checkpoint,
    run_in_own_group,
    sigterm_after_second_batch,
    standalone_cluster,
    unique_topic,
)

from samples import page_view, prove, value

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

PROJECT_DIR = Path(__file__).resolve().parents[2]
SUBMIT = PROJECT_DIR / "deploy" / "submit.sh"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """dist/ as `make package` builds it (with this environment's tools, already installed)."""
    dist = tmp_path_factory.mktemp("dist")
    command = ["make", "--no-print-directory", "-o", "install", "package"]
    command += [f"DIST_DIR={dist}", f"VENV={sys.prefix}"]
    done = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    yield dist
    shutil.rmtree(dist, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    directory = tmp_path_factory.mktemp("cluster")
    try:
        with standalone_cluster(directory) as running:
            yield running
        assert processes_of(directory) == [], "a daemon or driver outlived it"
    finally:
        shutil.rmtree(directory, ignore_errors=True)  # every application's unpacked archive


{%- if cookiecutter.sink_format == "delta" %}


@pytest.fixture(scope="module")
def delta_jars(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Delta's jars for this Spark, as `connector fetch` lists them for SPARK_DELTA_JARS:
    submit.sh ships them with --jars, where --packages would ask Spark's resolver."""
    command = [sys.executable, "-m", "{{ cookiecutter.package_name }}"]
    command += ["connector", "fetch", "--json"]
    done = subprocess.run(
        command, cwd=tmp_path_factory.mktemp("fetch"), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    jars: list[str] = json.loads(done.stdout)["delta_jars"]
    assert jars, done.stdout
    return ",".join(jars)
{%- endif %}


@pytest.fixture
def submit(
    project: Project,
    cluster: SparkCluster,
    bundle: Path,
    kafka_backend: KafkaBackend,
    tmp_path: Path,
{%- if cookiecutter.sink_format == "delta" %}
    delta_jars: str,
{%- endif %}
) -> Iterator[tuple[list[str], dict[str, str]]]:
    """deploy/submit.sh with its options, and the environment a driver here needs."""
    connector = connector_under_test(project)
    env = {**cluster.env, "DIST_DIR": str(bundle)}
    env.pop("SPARK_HOME", None)  # submit.sh finds Spark as it does after `make install`
    env["SPARK_SUBMIT"] = str(Path(sys.prefix) / "bin" / "spark-submit")
    if connector == "builtin":
        env[SPARK_KAFKA_JARS] = ",".join(fetch_connector_jars())
{%- if cookiecutter.sink_format == "delta" %}
    env["SPARK_DELTA_JARS"] = delta_jars
{%- endif %}
    command = [str(SUBMIT), f"--master={cluster.master_url}", f"--connector={connector}"]
    command += [f"--conf={conf}" for conf in cluster.driver_confs]
    yield command, env
    shutil.rmtree(tmp_path / "environment", ignore_errors=True)


def test_the_bundle_holds_the_wheel_and_an_environment_without_pyspark(bundle: Path) -> None:
    names = {path.name for path in bundle.iterdir()}
    wheels = {name for name in names if name.endswith("-py3-none-any.whl")}
    assert len(wheels) == 1 and names - wheels == {"environment.tar.gz", "main.py"}, names
    with tarfile.open(bundle / "environment.tar.gz") as archive:
        packages = {
            parts[3]
            for parts in (Path(member).parts for member in archive.getnames())
            if len(parts) > 3 and parts[0] == "lib" and parts[2] == "site-packages"
        }
    # The platform brings Spark: a copy in the archive would shadow the cluster's own.
    assert not any(name == "pyspark" or name.startswith("pyspark-") for name in packages)
    assert {"pyarrow", "confluent_kafka", "pyspark_kafka_upgrade"} <= packages, sorted(packages)


def test_an_upgrade_on_the_cluster_loses_nothing_and_writes_nothing_twice(
    project: Project,
    spark: SparkSession,
    kafka_backend: KafkaBackend,
    cluster: SparkCluster,
    submit: tuple[list[str], dict[str, str]],
    tmp_path: Path,
) -> None:
    command, env = submit
    before = set(cluster.worker_dir.iterdir())

    def submitted(overrides: Sequence[str]) -> int:
        arguments = [*command, "--", *(f"--set={o}" for o in overrides), "run", "--available-now"]
        done = run_in_own_group(arguments, cwd=tmp_path, env=env, timeout=900)
        if done.returncode:  # shown with the test's failure, if it is one
            print(f"$ {' '.join(arguments)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        return done.returncode

    report = prove(project, spark, kafka_backend, tmp_path, run=submitted)
    assert report.exact, report.explain()
    # Version 1 and version 2, each an application whose executor ran the Python of the
    # unpacked archive. The driver refused version 2 on generation 1's checkpoint before it
    # started Spark: that submission registered no application.
    applications = sorted(set(cluster.worker_dir.iterdir()) - before)
    assert len(applications) == 2, applications
    for application in applications:
        assert (application / "0" / "environment" / "bin" / "python").exists(), application


def test_sigterm_to_submit_sh_lets_the_batch_in_flight_commit(
    kafka_backend: KafkaBackend, submit: tuple[list[str], dict[str, str]], tmp_path: Path
) -> None:
    # The runbook's pause: the signal reaches the Python driver, which stops after the batch
    # in flight, where spark-submit's JVM would stop the SparkContext.
    command, env = submit
    bootstrap = kafka_backend.bootstrap_servers
    topic = unique_topic("pause")
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, [Record(i % 2, None, value(page_view(i)), 0) for i in range(60)])
    overrides = [
        f"pipeline.name={topic}",
        f"pipeline.root={tmp_path / 'pipeline'}",
        f"kafka.bootstrap_servers={bootstrap}",
        f"kafka.topics={topic}",
        "kafka.max_offsets_per_trigger=4",
        "sink.trigger_interval=1 second",
        "ledger.store=sqlite",
        f"ledger.location={tmp_path / 'ledger.sqlite'}",
    ]
    stopped = sigterm_after_second_batch(
        [*command, "--", *(f"--set={o}" for o in overrides), "run"],
        cwd=tmp_path,
        env=env,
        start_timeout=300,
        stop_timeout=180,
    )
    assert stopped.returncode == 0, stopped.output
    assert "SIGTERM: stopping after the batches in flight" in stopped.output
    assert "stopped (stop request)" in stopped.output.splitlines()[-1]
    # The batch in flight committed: nothing the driver reported is left undone.
    state = read_checkpoint(GenerationLayout(str(tmp_path / "pipeline"), 1).checkpoint)
    reported = [int(line.split()[1]) for line in stopped.before_signal if "  aggregates  " in line]
    assert state.last_committed_batch is not None and state.last_committed_batch >= max(reported)
    assert f"committed aggregates to batch {state.last_committed_batch}" in stopped.output
