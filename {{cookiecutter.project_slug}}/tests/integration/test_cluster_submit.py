"""The packaged job on a real Spark standalone cluster: `make package`, then deploy/submit.sh.

Version 1 is submitted in client mode against real Kafka and stops once caught up; version 2
is refused on the old checkpoint; `upgrade plan` and `upgrade apply` run on this machine, as
an operator's would; version 2 is submitted and the result is checked against a count of
every event produced (the demo's check): nothing lost, nothing written twice. The executors
run the environment archive's Python on the worker, not this test's virtualenv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import support.kafka_backends as kafka
import support.spark
import support.spark_cluster as spark_cluster
from {{ cookiecutter.package_name }}.spark.kafka_jars import (
    SPARK_KAFKA_JARS,
)

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

PROJECT = Path(__file__).resolve().parents[2]
DEMO = PROJECT / "demo" / "upgrade_demo.py"
PACKAGE_TIMEOUT_S = 600
DEMO_TIMEOUT_S = 1200


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """dist/ as `make package` builds it, into a directory of this test's own."""
    dist = tmp_path_factory.mktemp("dist")
    # VENV: this test's own environment, already installed, rather than a second one.
    finished = subprocess.run(
        ["make", "--no-print-directory", "package", f"DIST={dist}", f"VENV={sys.prefix}"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=PACKAGE_TIMEOUT_S,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    yield dist
    shutil.rmtree(dist, ignore_errors=True)


def test_the_bundle_holds_the_wheel_its_environment_without_pyspark_and_the_entry(
    bundle: Path,
) -> None:
    names = sorted(path.name for path in bundle.iterdir())
    assert names[0] == "environment.tar.gz" and names[1] == "main.py", names
    assert len(names) == 3 and names[2].endswith("-py3-none-any.whl"), names
    with tarfile.open(bundle / "environment.tar.gz") as archive:
        # lib/python3.X/site-packages/<name>/...: the top-level names installed.
        packages = {
            parts[3]
            for parts in (Path(member).parts for member in archive.getnames())
            if len(parts) > 3 and parts[0] == "lib" and parts[2] == "site-packages"
        }
    # The platform brings Spark: a copy in the archive would shadow the cluster's own.
    assert not any(name == "pyspark" or name.startswith("pyspark-") for name in packages)
    assert {"pyarrow", "confluent_kafka", "{{ cookiecutter.package_name }}"} <= packages, sorted(packages)


def test_version_1_then_the_upgrade_then_version_2_on_a_standalone_cluster(
    request: pytest.FixtureRequest, bundle: Path, tmp_path: Path
) -> None:
    connector = support.spark.connector_under_test()
    if connector == "builtin":
        support.spark.skip_unless_builtin_jars_can_be_had()
    backend: kafka.KafkaBackend = request.getfixturevalue("kafka_backend")
    cluster_dir = tmp_path / "cluster"
    work = tmp_path / "demo"
    try:
        with spark_cluster.standalone_cluster(cluster_dir) as cluster:
            env = {
                **cluster.env,
                "KAFKA_BOOTSTRAP_SERVERS": backend.bootstrap_servers,
                "DIST_DIR": str(bundle),
            }
            env.pop("KAFKA_BACKEND", None)  # the demo takes the broker this session runs
            if connector == "builtin":
                # spark-submit ships the jars with --jars; nothing asks a repository.
                env[SPARK_KAFKA_JARS] = ",".join(_connector_jars())
            demo = [sys.executable, str(DEMO), "--dir", str(work), "--connector", connector]
            demo += ["--submit", cluster.master_url]
            demo += [f"--submit-conf={conf}" for conf in cluster.driver_confs]
            finished = subprocess.run(
                demo,
                env=env,
                capture_output=True,
                text=True,
                timeout=DEMO_TIMEOUT_S,
                check=False,
            )
            applications = sorted(path.name for path in cluster.worker_dir.iterdir())
        shown = finished.stdout + finished.stderr[-3000:]
        assert finished.returncode == 0, shown
        assert "  windows written twice:           0\n" in finished.stdout, shown
        assert "  OK: no event lost, no window written twice.\n" in finished.stdout, shown
        # Each run went to the cluster: three submissions (version 1, version 2 refused,
        # version 2), each an application whose executor the worker started.
        submitted = [line for line in finished.stdout.splitlines() if "deploy/submit.sh" in line]
        assert len(submitted) == 3, shown
        assert all(f"--master={cluster.master_url}" in line for line in submitted), submitted
        assert len(applications) == 3 and all(a.startswith("app-") for a in applications)
        # The refusal crossed spark-submit with its exit code.
        assert "  (exit 3, " in finished.stdout, shown
        # Plan and apply ran on this machine, with the package's own CLI.
        assert "$ {{ cookiecutter.package_name }} --config version-2.toml upgrade apply" in finished.stdout
        assert _processes_under(tmp_path) == []
    finally:
        # The worker keeps every application's unpacked archive: hundreds of MB per run.
        shutil.rmtree(cluster_dir, ignore_errors=True)
        shutil.rmtree(work / "environment", ignore_errors=True)


def _connector_jars() -> list[str]:
    listed = subprocess.run(
        [sys.executable, "-m", "{{ cookiecutter.package_name }}", "connector", "fetch", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    return [str(jar) for jar in json.loads(listed.stdout)["jars"]]


def _processes_under(directory: Path) -> list[str]:
    """Command lines of live processes that name ``directory``: daemons, drivers, executors."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if str(directory) in command:
            found.append(command[:200])
    return found
