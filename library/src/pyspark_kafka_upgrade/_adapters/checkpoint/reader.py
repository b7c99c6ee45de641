"""Read a checkpoint through ``storage``: no JVM, any filesystem.

The checkpoint decides what committed (DESIGN, "Checkpoint truth"): batch N is done when
``commits/N`` exists, and W is ``batchWatermarkMs`` of ``offsets/N`` for the last committed
N, not the commit's ``nextBatchWatermarkMs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from pyspark_kafka_upgrade._adapters.storage.filesystem import Location, StorageError, open_location
from pyspark_kafka_upgrade._core.formats.commit_log import CommitEntry, parse_commit_log
from pyspark_kafka_upgrade._core.formats.format_errors import (
    CheckpointError,
    NotACheckpointError,
)
from pyspark_kafka_upgrade._core.formats.log_files import batch_id_of
from pyspark_kafka_upgrade._core.formats.offset_log import OffsetLogEntry, parse_offset_log
from pyspark_kafka_upgrade._core.formats.query_metadata import parse_query_metadata
from pyspark_kafka_upgrade._domain.records.history import CheckpointBatch, CheckpointFacts
from pyspark_kafka_upgrade._domain.values.offsets import flatten, parse_offsets

__all__ = ["CheckpointState", "read_checkpoint"]

METADATA_FILE = "metadata"
OFFSETS_DIR = "offsets"
COMMITS_DIR = "commits"

Entry = TypeVar("Entry")
_Parsed = TypeVar("_Parsed", covariant=True)


class _LogParser(Protocol[_Parsed]):
    def __call__(self, content: bytes, *, batch_id: int, where: str) -> _Parsed: ...


@dataclass(frozen=True, slots=True)
class CheckpointState:
    """What a checkpoint holds: its query id and the retained offset and commit log entries.

    Spark deletes old entries (it keeps ``spark.sql.streaming.minBatchesToRetain``, 100 by
    default), so the logs may start above batch 0.
    """

    uri: str
    query_id: str | None  # None when the checkpoint has no metadata file
    offsets: Mapping[int, OffsetLogEntry]  # by batch id, ascending
    commits: Mapping[int, CommitEntry]  # by batch id, ascending

    @property
    def last_committed_batch(self) -> int | None:
        """The highest N with ``commits/N``: batches run in order, so all before it are done."""
        return max(self.commits) if self.commits else None

    @property
    def last_committed(self) -> OffsetLogEntry | None:
        """``offsets/N`` of the last committed batch, if it is still there."""
        last = self.last_committed_batch
        return None if last is None else self.offsets.get(last)

    @property
    def watermark_ms(self) -> int | None:
        """W: the watermark the last committed batch ran with, the restart reference."""
        entry = self.last_committed
        return None if entry is None else entry.batch_watermark_ms

    @property
    def next_watermark_ms(self) -> int | None:
        """``nextBatchWatermarkMs`` of the last commit: what the next batch will run with."""
        last = self.last_committed_batch
        return None if last is None else self.commits[last].next_batch_watermark_ms

    @property
    def planned_not_committed(self) -> tuple[int, ...]:
        """Batches with ``offsets/N`` after the last commit: a restart runs them again.

        Spark resumes from the latest offsets and the latest commit only, so an offsets file
        at or below the last commit without its own commit file (purged unevenly) is done.
        """
        last = self.last_committed_batch
        return tuple(batch for batch in self.offsets if last is None or batch > last)

    @property
    def retained_batches(self) -> tuple[int, ...]:
        """Committed batches whose offsets and commit files both still exist."""
        return tuple(batch for batch in self.offsets if batch in self.commits)


def read_checkpoint(uri: str) -> CheckpointState:
    """Read the checkpoint at ``uri`` (a path or a URI that ``storage`` can open).

    Raises NotACheckpointError, CorruptCheckpointError, UnsupportedLogVersionError, or
    StorageError when the filesystem fails.
    """
    root = open_location(uri)
    names = _checkpoint_names(root)
    query_id = None
    if METADATA_FILE in names:
        metadata = root.child(METADATA_FILE)
        query_id = parse_query_metadata(metadata.read_bytes(), where=metadata.uri)
    return CheckpointState(
        uri=uri,
        query_id=query_id,
        offsets=_read_log(root.child(OFFSETS_DIR), parse_offset_log),
        commits=_read_log(root.child(COMMITS_DIR), parse_commit_log),
    )


def _checkpoint_names(root: Location) -> list[str]:
    if not root.exists():
        raise NotACheckpointError(
            f"no checkpoint at {root.uri}: the path does not exist; expected a directory "
            f"with a {METADATA_FILE!r} file and an {OFFSETS_DIR!r} directory"
        )
    if not root.is_dir():
        raise NotACheckpointError(
            f"{root.uri} is a file, not a checkpoint directory; expected a directory with a "
            f"{METADATA_FILE!r} file and an {OFFSETS_DIR!r} directory"
        )
    names = root.list_names()
    if METADATA_FILE not in names and OFFSETS_DIR not in names:
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        found = f"found only: {shown}" if names else "found an empty directory"
        raise NotACheckpointError(
            f"{root.uri} is not a Spark checkpoint: expected a {METADATA_FILE!r} file and an "
            f"{OFFSETS_DIR!r} directory, {found}"
        )
    return names


def _read_log(directory: Location, parse: _LogParser[Entry]) -> dict[int, Entry]:
    entries: dict[int, Entry] = {}
    batch_ids = sorted(
        batch for batch in map(batch_id_of, directory.list_names()) if batch is not None
    )
    for batch_id in batch_ids:
        location = directory.child(str(batch_id))
        try:
            content = location.read_bytes()
        except StorageError:
            # A running query purges old entries; one listed a moment ago may be gone now.
            if not location.exists():
                continue
            raise
        entries[batch_id] = parse(content, batch_id=batch_id, where=location.uri)
    return entries


def last_committed_batch(uri: str) -> int | None:
    """The checkpoint's last committed batch, or None when there is none or no checkpoint.

    The truth about what a query finished, where its lastProgress may name the next batch
    id of a trigger that found no data.
    """
    try:
        return read_checkpoint(uri).last_committed_batch
    except CheckpointError:
        return None  # the query failed before it wrote a checkpoint


def newest_batch(uri: str) -> tuple[int, int] | None:
    """(id, watermark) of the newest batch the checkpoint holds, committed or only planned (a
    table's commit may be ahead of the checkpoint's); None where no checkpoint exists yet.

    Any other fault of the checkpoint is raised: a caller deciding from it must not guess.
    """
    if not open_location(uri).exists():
        return None
    offsets = read_checkpoint(uri).offsets
    if not offsets:
        return None
    batch = max(offsets)
    return batch, offsets[batch].batch_watermark_ms


def checkpoint_facts(state: CheckpointState) -> CheckpointFacts:
    """The committed batches' retained offsets/N files, as the planner and verify read them."""
    batches = []
    for batch_id, entry in state.offsets.items():
        offsets = entry.kafka_offsets
        if batch_id in state.commits and offsets is not None:
            batches.append(
                CheckpointBatch(
                    batch_id=batch_id,
                    end_offsets=flatten(parse_offsets(offsets)),
                    watermark_ms=entry.batch_watermark_ms,
                )
            )
    return CheckpointFacts(
        last_committed_batch=state.last_committed_batch,
        batches=tuple(batches),
        next_watermark_ms=state.next_watermark_ms,
    )
