"""Open the offset store the settings name.

A store whose client library is an extra (PostgreSQL: ``pyspark-kafka-upgrade[postgres]``)
is usable only where that extra is installed, so each store is imported by name only when it
is asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from pyspark_kafka_upgrade._core.settings import LedgerSettings
from pyspark_kafka_upgrade._domain.records.ledger_errors import OffsetStoreNotInstalledError
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.catalog import STORES


def installed_stores() -> list[str]:
    """The store kinds whose client libraries are installed here."""
    return [
        name
        for name, kind in STORES.items()
        if kind.requires is None or importlib.util.find_spec(kind.requires) is not None
    ]


def ledger_exists(ledger: LedgerSettings) -> bool:
    """False only when the ledger surely does not exist yet: opening it would create it.

    Read-only commands use this so that looking never leaves an empty SQLite file behind.
    A server or a remote directory may exist without being visible here, so those count.
    """
    return STORES[ledger.store].may_exist(ledger.location)


def open_store(ledger: LedgerSettings, *, spark: Callable[[], Any] | None = None) -> OffsetStore:
    """Open the store of ``ledger``.

    ``spark`` returns a SparkSession; only the filesystem store needs one (it writes through
    Spark's Hadoop filesystem API), so it is called only then.
    """
    kind = STORES[ledger.store]
    if ledger.store not in installed_stores():
        raise OffsetStoreNotInstalledError(
            f"ledger.store = {ledger.store!r} needs {kind.requires}, which is not installed: "
            f"install pyspark-kafka-upgrade[{kind.extra}]; usable here: "
            f"{', '.join(installed_stores())}"
        )
    store_class = getattr(importlib.import_module(f".{kind.module}", __package__), kind.class_name)
    if kind.needs_spark:
        if spark is None:
            raise OffsetStoreNotInstalledError(
                f"the {ledger.store} ledger writes through Spark; no SparkSession was provided"
            )
        return store_class(spark(), ledger.location)  # type: ignore[no-any-return]
    return store_class(ledger.location)  # type: ignore[no-any-return]
