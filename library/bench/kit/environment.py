"""The environment a run's figures depend on, gathered once at its start."""

from __future__ import annotations

import platform
import re
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import psutil

from bench.record import Environment

_KAFKA_VERSION = re.compile(r"Kafka (\d+\.\d+\.\d+)")


def gather(backend_name: str, backend_description: str, connectors: tuple[str, ...]) -> Environment:
    kafka = _KAFKA_VERSION.search(backend_description)
    return Environment(
        cores=psutil.cpu_count() or 0,
        load_1m=psutil.getloadavg()[0],
        memory_gib=psutil.virtual_memory().total / 1024**3,
        python=platform.python_version(),
        spark=_installed("pyspark"),
        kafka=kafka.group(1) if kafka else "unknown",
        backend=backend_name,
        connectors=connectors,
        commit=_commit(),
    )


def _installed(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"
