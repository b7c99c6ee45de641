"""The extension points, one home each: the sinks and their formats, the ledger's stores and
the Kafka connectors. Settings, opening a sink or a store and the stream reader all read these
lists; nothing else names a format, a store or a connector.

Adding one is a library change with its contract tests:
- a format Spark's file sink writes: one line in ``SinkFormat`` and its entry in ``SINKS``;
  its files must end in ``.<format>``, which is how the file sink tells a generation's format;
- a sink of another kind (a table): its module in ``sink`` implementing
  ``records.sink.Sink``, its harness in the sink contract test, its entries in ``SINKS``;
- a store: its module in ``ledger`` (with its own dependencies, an extra when it needs one),
  its contract test, one entry in ``STORES``;
- a connector: its source, one entry in ``Connector`` and ``SOURCE_FORMATS``.
The template's hooks read this file by path (standard library only) for their answer
lists, and a template test holds cookiecutter.json to them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

# -- The sinks, by the format in the settings ------------------------------------------------

SinkFormat = Literal["parquet", "orc", "delta"]
SINK_FORMATS: tuple[SinkFormat, ...] = get_args(SinkFormat)


@dataclass(frozen=True, slots=True)
class SinkKind:
    module: str  # in the sink package
    class_name: str  # implements records.sink.Sink
    one_table: bool = False  # every generation in one table, rather than a directory each


_FILE_SINK = SinkKind(module="file_sink", class_name="FileSink")
SINKS: dict[SinkFormat, SinkKind] = {
    "parquet": _FILE_SINK,
    "orc": _FILE_SINK,
    # One Delta Lake table for every generation; its log is read with the `delta` extra.
    "delta": SinkKind(module="delta_sink", class_name="DeltaSink", one_table=True),
}

# -- The Kafka connectors -------------------------------------------------------------------

Connector = Literal["python", "builtin"]
CONNECTORS: tuple[Connector, ...] = get_args(Connector)
# The name each is registered under with spark.readStream.format().
SOURCE_FORMATS: dict[Connector, str] = {"python": "pykafka", "builtin": "kafka"}

# -- The ledger's stores ----------------------------------------------------------------------

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
    module: str  # in the ledger package
    class_name: str
    # Opened with a SparkSession before the location: it writes through Spark's Hadoop
    # filesystem API.
    needs_spark: bool
    location: str  # what ledger.location holds
    # False only when the ledger surely does not exist yet, so opening it would create it.
    may_exist: Callable[[str], bool]
    # True when the ledger is on this machine's disk, out of reach of a cluster's machines.
    on_this_disk: Callable[[str], bool]
    # The module its client library brings, and the extra that installs it; None: the
    # core install has all it needs.
    requires: str | None = None
    extra: str | None = None


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
        requires="psycopg",
        extra="postgres",
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
