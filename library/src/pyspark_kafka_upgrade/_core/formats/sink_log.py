"""A file sink's ``_spark_metadata`` log: which files each batch committed to the output.

Each batch writes ``_spark_metadata/N``::

    v1
    {"path":"file:///out/part-00000-....parquet","size":541,"isDir":false,
     "modificationTime":1700000000000,"blockReplication":1,"blockSize":33554432,"action":"add"}

Every ``spark.sql.streaming.fileSink.log.compactInterval`` batches (10 by default; batch ids
9, 19, ...) the batch's file is ``N.compact`` instead and holds every entry of the earlier
batches too, so the live files are those of the latest compact file and of each batch after
it. Older batch files are deleted some time later. Readers of the output directory see only
these files; anything else in the directory is debris of batches that never committed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyspark_kafka_upgrade._core.formats.format_errors import CorruptCheckpointError
from pyspark_kafka_upgrade._core.formats.log_files import (
    integer_field,
    parse_json_object,
    parse_version,
    split_lines,
)

SINK_LOG_VERSIONS = (1,)
ADD_ACTION = "add"
DELETE_ACTION = "delete"


@dataclass(frozen=True, slots=True)
class SinkFileEntry:
    """One line of a sink log file."""

    path: str  # a URI with percent-encoding, as Spark writes it (file:///..., s3a://...)
    size: int
    action: str  # "add" or "delete"
    modification_time_ms: int


@dataclass(frozen=True, slots=True)
class SinkLog:
    """What a file sink's log says is committed."""

    uri: str  # the sink (output) directory
    batch_ids: tuple[int, ...]  # batches whose log file is still present, ascending
    compact_batch_id: int | None  # the latest compacted batch, whose file holds all before it
    files: tuple[SinkFileEntry, ...]  # live files: added and not deleted since, in log order

    @property
    def first_batch_id(self) -> int | None:
        return self.batch_ids[0] if self.batch_ids else None

    @property
    def last_batch_id(self) -> int | None:
        """The last batch the sink committed; the sink skips any batch id up to it."""
        return self.batch_ids[-1] if self.batch_ids else None


def parse_sink_log_file(content: bytes, *, where: str) -> tuple[SinkFileEntry, ...]:
    """The entries of one ``_spark_metadata/N`` or ``N.compact`` file, in file order."""
    lines = split_lines(content, where)
    parse_version(lines, where, known=SINK_LOG_VERSIONS)
    return tuple(
        _parse_entry(line, f"{where} line {number}", where, number)
        for number, line in enumerate(lines[1:], start=2)
    )


def live_files(entries: Iterable[SinkFileEntry]) -> tuple[SinkFileEntry, ...]:
    """The files still visible after applying entries in log order: a delete hides an add."""
    visible: dict[str, SinkFileEntry] = {}
    for entry in entries:
        if entry.action == ADD_ACTION:
            visible[entry.path] = entry
        else:
            visible.pop(entry.path, None)
    return tuple(visible.values())


def _parse_entry(line: str, place: str, where: str, number: int) -> SinkFileEntry:
    data = parse_json_object(line, where, number)
    path = data.get("path")
    action = data.get("action")
    if not isinstance(path, str) or not path:
        raise CorruptCheckpointError(f"{place} has no file path: {line[:80]!r}")
    if action not in (ADD_ACTION, DELETE_ACTION):
        raise CorruptCheckpointError(
            f"{place}: action must be {ADD_ACTION!r} or {DELETE_ACTION!r}, got {action!r}"
        )
    return SinkFileEntry(
        path=path,
        size=integer_field(data, "size", place),
        action=str(action),
        modification_time_ms=integer_field(data, "modificationTime", place, default=0),
    )
