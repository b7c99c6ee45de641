"""A cluster master with storage on this machine's disk is refused, before Spark starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pyspark_kafka_upgrade._adapters.spark.cluster_storage import (
    ClusterStorageError,
    check_storage_reaches,
    shares_this_disk,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from support.example import MODULE

SHARED = [
    "pipeline.root=s3a://bucket/page-views",
    "ledger.store=postgres",
    "ledger.location=postgresql://ledger.internal/pipelines",
]


def settings(*overrides: str) -> Settings:
    return load_settings(PROJECT, env={}, overrides=list(overrides)).settings


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[2]",
        "local[*]",
        "local-cluster[2,1,1024]",
        "spark://127.0.0.1:7077",
        "spark://localhost:7077",
        "spark://[::1]:7077",
        "spark://127.0.0.1:7077,127.0.0.2:7078",
    ],
)
def test_masters_on_this_machine_share_its_disk(master: str) -> None:
    assert shares_this_disk(master)
    check_storage_reaches(settings(), master)  # the default: a local root and SQLite


@pytest.mark.parametrize(
    "master",
    [
        "yarn",
        "k8s://https://127.0.0.1:6443",
        "spark://10.0.0.5:7077",
        "spark://127.0.0.1:7077,10.0.0.5:7077",
        "spark://spark-master.internal:7077",
        "mesos://127.0.0.1:5050",
    ],
)
def test_cluster_masters_do_not(master: str) -> None:
    assert not shares_this_disk(master)


def test_a_local_root_and_a_sqlite_ledger_are_both_named() -> None:
    with pytest.raises(ClusterStorageError) as refused:
        check_storage_reaches(settings("pipeline.root=data"), "yarn")
    message = str(refused.value)
    assert "'yarn' runs executors on other machines" in message
    assert "pipeline.root = 'data'" in message
    assert "ledger.store = 'sqlite'" in message
    assert "pipeline.local_storage_on_cluster = true" in message


def test_shared_storage_and_a_postgres_ledger_pass() -> None:
    check_storage_reaches(settings(*SHARED), "yarn")


@pytest.mark.parametrize(
    ("location", "refused"),
    [("s3a://bucket/ledger", False), ("file:///mnt/ledger", True), ("ledger-dir", True)],
)
def test_a_filesystem_ledger_passes_only_on_shared_storage(location: str, refused: bool) -> None:
    chosen = settings(*SHARED[:1], "ledger.store=filesystem", f"ledger.location={location}")
    if refused:
        with pytest.raises(ClusterStorageError, match=r"ledger.store = 'filesystem'"):
            check_storage_reaches(chosen, "k8s://https://10.0.0.1:6443")
    else:
        check_storage_reaches(chosen, "k8s://https://10.0.0.1:6443")


def test_the_override_allows_a_path_every_machine_mounts() -> None:
    mounted = settings(
        "pipeline.root=/mnt/shared/page-views", "pipeline.local_storage_on_cluster=true"
    )
    check_storage_reaches(mounted, "spark://10.0.0.5:7077")


def test_run_refuses_before_spark_starts(tmp_path: Path) -> None:
    # A subprocess on a PATH without Java: the refusal must come before any JVM could start.
    done = subprocess.run(
        [sys.executable, "-m", MODULE, "run", "--master", "yarn"],
        cwd=tmp_path,
        env={"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "runs executors on other machines" in done.stderr
    assert not (tmp_path / "data").exists()
