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


def _cannot_tell(location: str) -> bool:
    # A server or a remote directory may exist without being visible from here.
    return True


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


STORES: dict[StoreName, StoreKind] = {
    "sqlite": StoreKind("sqlite_store", "SqliteOffsetStore", False, "a file path", _file_exists),
    "postgres": StoreKind("postgres_store", "PostgresOffsetStore", False, "a DSN", _cannot_tell),
    "filesystem": StoreKind(
        "filesystem_store", "FilesystemOffsetStore", True, "a directory URI", _cannot_tell
    ),
}
STORE_NAMES: tuple[StoreName, ...] = get_args(StoreName)
