"""A ledger for one test, of the store kind the project chose.

PostgreSQL: the server ``LEDGER_TEST_POSTGRES_DSN`` names (one per test run; every test's
pipeline has a name of its own there). SQLite and the filesystem: the test's directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark_kafka_upgrade._adapters.ledger.opening import installed_stores
from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.values.project import Project

POSTGRES_DSN_ENV = "LEDGER_TEST_POSTGRES_DSN"
DEFAULT_POSTGRES_DSN = "postgresql://127.0.0.1:5432/test"


def ledger_overrides(project: Project, tmp_path: Path) -> list[str]:
    """``ledger.store`` and ``ledger.location`` overrides for one test."""
    store = load_settings(project, env={}).settings.ledger.store
    if store not in installed_stores():
        raise RuntimeError(
            f"the project's ledger store {store!r} needs an extra that is not installed: "
            f"install pyspark-kafka-upgrade[{store}]"
        )
    location = {
        "sqlite": str(tmp_path / "ledger.sqlite"),
        "filesystem": str(tmp_path / "ledger"),
        "postgres": os.environ.get(POSTGRES_DSN_ENV, DEFAULT_POSTGRES_DSN),
    }[store]
    return [f"ledger.store={store}", f"ledger.location={location}"]
