"""The offset stores a project can keep: the one list the settings, opening a store and the
template's hooks read.

Each store lives in its own module of this package, with its own dependencies, and the
template removes the modules a project did not choose. Adding a store is its module, its
contract test, one entry here and one option among the template's choices (a
template test holds the two lists together). Standard library only: the template's hooks
load this file as is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

StoreName = Literal["sqlite", "postgres", "filesystem"]


def _file_exists(location: str) -> bool:
    return Path(location).exists()


def _always(location: str) -> bool:
    return True


def _never(location: str) -> bool:
    return False


def _local_path(location: str) -> bool:
    return "://" not in location or location.startswith("file:")


@dataclass(frozen=True, slots=True)
class StoreKind:
    module: str  # in this package
    class_name: str
    # Opened with a SparkSession before the location: it writes through Spark's Hadoop
    # filesystem API.
    needs_spark: bool
    location: str  # what ledger.location holds
    # False only when the ledger surely does not exist yet, so opening it would create it.
    may_exist: Callable[[str], bool]
    # True when the ledger is on this machine's disk, out of reach of a cluster's machines.
    on_this_disk: Callable[[str], bool]


STORES: dict[StoreName, StoreKind] = {
    "sqlite": StoreKind(
        module="sqlite_store",
        class_name="SqliteOffsetStore",
        needs_spark=False,
        location="a file path",
        may_exist=_file_exists,
        on_this_disk=_always,
    ),
    "postgres": StoreKind(
        module="postgres_store",
        class_name="PostgresOffsetStore",
        needs_spark=False,
        location="a DSN",
        may_exist=_always,  # a server or remote directory may exist unseen from here
        on_this_disk=_never,
    ),
    "filesystem": StoreKind(
        module="filesystem_store",
        class_name="FilesystemOffsetStore",
        needs_spark=True,
        location="a directory URI",
        may_exist=_always,  # a server or remote directory may exist unseen from here
        on_this_disk=_local_path,
    ),
}
STORE_NAMES: tuple[StoreName, ...] = get_args(StoreName)
