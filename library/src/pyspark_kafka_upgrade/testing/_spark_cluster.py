"""A real Spark standalone cluster, one master and one worker, on 127.0.0.1 for one test.

Started from the installed pyspark: its wheel has ``bin/spark-class`` (no ``start-master.sh``).
Each daemon is this process's child, in its own process group, and the kernel kills it if
the test run dies (the same guard as the Kafka broker's), so nothing outlives the test. Every
directory they write (logs, the worker's directory, which keeps each application's unpacked
archive, hundreds of MB) lives under the test's own temporary directory.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

import pyspark_kafka_upgrade.testing._waiting as waiting
from pyspark_kafka_upgrade.testing._jvm import executor_java_options
from pyspark_kafka_upgrade.testing._processes import (
    dies_with_this_process,
    free_ports,
    stop_group,
    tail,
)

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
WORKER_CORES = 2
WORKER_MEMORY = "3g"

_MASTER = "org.apache.spark.deploy.master.Master"
_WORKER = "org.apache.spark.deploy.worker.Worker"


class SparkClusterError(RuntimeError):
    """A daemon of the test cluster did not start, with its log's last lines."""


@dataclass(frozen=True)
class SparkCluster:
    master_url: str
    # What a driver on this machine needs to stay on loopback and reach the cluster.
    env: Mapping[str, str]
    driver_confs: tuple[str, ...]
    worker_dir: Path


def cluster_env(base: Mapping[str, str], directory: Path) -> dict[str, str]:
    """The environment of the daemons and of the drivers submitted to them: loopback only."""
    return {
        **base,
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOG_DIR": str(directory / "logs"),
        "SPARK_PID_DIR": str(directory / "pids"),
        "SPARK_WORKER_DIR": str(directory / "work"),
        # Shuffle files and the copies of shipped archives, which default to /tmp.
        "SPARK_LOCAL_DIRS": str(directory / "local"),
        # The pip-installed pyspark is the Spark home; a SPARK_HOME from the machine would
        # start another Spark's daemons.
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
    }


@contextmanager
def standalone_cluster(directory: Path) -> Iterator[SparkCluster]:
    """A master and a worker on free loopback ports; both stopped on exit, crashed or not."""
    env = cluster_env(os.environ, directory)
    for name in ("logs", "pids", "work", "local"):
        (directory / name).mkdir(parents=True, exist_ok=True)
    spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
    master_port, master_ui, worker_port, worker_ui = free_ports(4)
    master_url = f"spark://{LOOPBACK}:{master_port}"
    master = [spark_class, _MASTER, "--host", LOOPBACK, "--port", str(master_port)]
    master += ["--webui-port", str(master_ui)]
    worker = [spark_class, _WORKER, "--host", LOOPBACK, "--port", str(worker_port)]
    worker += ["--webui-port", str(worker_ui), "--cores", str(WORKER_CORES)]
    worker += ["--memory", WORKER_MEMORY, "--work-dir", env["SPARK_WORKER_DIR"], master_url]
    with ExitStack() as stack:
        logs = directory / "logs"
        ready = "I have been elected leader"
        stack.enter_context(_daemon(master, env, logs / "master.log", ready=ready))
        ready = "Successfully registered with master"
        stack.enter_context(_daemon(worker, env, logs / "worker.log", ready=ready))
        yield SparkCluster(
            master_url=master_url,
            env=env,
            driver_confs=(
                f"spark.driver.host={LOOPBACK}",
                f"spark.driver.bindAddress={LOOPBACK}",
                "spark.ui.enabled=false",
                f"spark.executor.extraJavaOptions={executor_java_options(env)}",
            ),
            worker_dir=Path(env["SPARK_WORKER_DIR"]),
        )


@contextmanager
def _daemon(
    command: list[str], env: Mapping[str, str], log_file: Path, *, ready: str
) -> Iterator[None]:
    with log_file.open("w") as log:
        process = subprocess.Popen(
            command,
            env=dict(env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=dies_with_this_process(),
        )
    try:
        waiting.wait_until(
            lambda: process.poll() is not None or ready in log_file.read_text(errors="replace"),
            timeout=START_TIMEOUT_S,
            interval=0.2,
            message=f"{command[1]} did not log {ready!r}",
        )
        if process.poll() is not None:
            last = "\n".join(tail(log_file, 30))
            raise SparkClusterError(f"{command[1]} exited with {process.returncode}:\n{last}")
        yield
    finally:
        # The whole group, even when its leader has exited: executors a worker started
        # are in it.
        stop_group(process, STOP_TIMEOUT_S)


def processes_of(directory: Path) -> list[str]:
    """Live processes started with this cluster's environment: daemons, executors, drivers."""
    marker = f"SPARK_LOG_DIR={directory / 'logs'}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found
