"""What a Delta table's log says each generation committed, read with delta-rs (no JVM).

Each batch of each generation is one commit (``delta_writer``), carrying two marks:
* a ``txn`` action: application id ``pyspark-kafka-upgrade/generation-<n>`` (:func:`app_id`)
  and version = the batch id. Delta keeps the latest one per application in every snapshot,
  checkpoints included, so the last batch a generation committed is always known, however
  old the table;
* ``userMetadata`` ``{"generation": n, "batch": b}`` in its commit info, which names every
  batch for as long as the log keeps that commit's file (``delta.logRetentionDuration``,
  30 days by default).

Files belong to a generation by their partition (``generation=<n>``): the table is
partitioned by generation, so no file, even after an OPTIMIZE, mixes two.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade._core.formats.sink_log import SinkFileEntry
from pyspark_kafka_upgrade._domain.records.sink import GENERATION
from pyspark_kafka_upgrade._domain.records.sink_errors import DeltaLogError

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = [
    "TableLog",
    "app_id",
    "commit_mark",
    "has_log",
    "last_batch",
    "mark_text",
    "read_table_log",
]

_APP_PREFIX = "pyspark-kafka-upgrade/generation-"
_ADVICE = (
    "install the library's `delta` extra (pip install 'pyspark-kafka-upgrade[delta]'), which "
    "reads a Delta table's log without Spark"
)


def app_id(generation: int) -> str:
    """The Delta transaction application id of ``generation``'s commits."""
    return f"{_APP_PREFIX}{generation}"


@dataclass(frozen=True, slots=True)
class TableLog:
    """A table's snapshot, as far as generations go; ``version`` None: no table yet."""

    location: str
    version: int | None = None
    # Each generation's live files, as absolute URIs with their committed sizes.
    files: Mapping[int, tuple[SinkFileEntry, ...]] = field(default_factory=dict)
    # Each generation's batches the retained log names, ascending.
    batches: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def generations(self) -> list[int]:
        return sorted(set(self.files) | set(self.batches))


def read_table_log(location: str) -> TableLog:
    """The table at ``location`` (a path or URI); an empty log when there is none yet."""
    table = _open(location)
    if table is None:
        return TableLog(location)
    files: dict[int, list[SinkFileEntry]] = {}
    import pyarrow as pa

    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    base = location.rstrip("/")
    for action in actions:
        generation = action.get(f"partition.{GENERATION}")
        if generation is None:
            continue  # not a file this library wrote: its generation is unknown
        files.setdefault(int(generation), []).append(
            SinkFileEntry(
                path=f"{base}/{action['path']}",
                size=int(action["size_bytes"]),
                action="add",
                modification_time_ms=int(action["modification_time"]),
            )
        )
    batches: dict[int, set[int]] = {}
    for commit in table.history():
        mark = commit_mark(commit.get("userMetadata"))
        if mark is not None:
            batches.setdefault(mark[0], set()).add(mark[1])
    for generation in list(batches) + list(files):
        last = table.transaction_version(app_id(generation))
        if last is not None:
            batches.setdefault(generation, set()).add(int(last))
    return TableLog(
        location,
        version=table.version(),
        files={generation: tuple(entries) for generation, entries in sorted(files.items())},
        batches={generation: tuple(sorted(ids)) for generation, ids in sorted(batches.items())},
    )


def last_batch(location: str, generation: int) -> int | None:
    """The last batch ``generation`` committed to the table, from the snapshot alone (cheap
    at any age: no commit file is read for it); None when none."""
    table = _open(location)
    if table is None:
        return None
    last = table.transaction_version(app_id(generation))
    return None if last is None else int(last)


def has_log(location: str) -> bool:
    """Whether ``location`` holds a Delta table (a log with a commit) already."""
    return _open(location) is not None


def mark_text(generation: int, batch: int) -> str:
    """The ``userMetadata`` a generation's batch commits with (``delta_writer``)."""
    return json.dumps({"generation": generation, "batch": batch})


def commit_mark(text: object) -> tuple[int, int] | None:
    """(generation, batch) of a commit's ``userMetadata``; None for another writer's."""
    if not isinstance(text, str):
        return None
    try:
        mark = json.loads(text)
    except ValueError:
        return None
    if not isinstance(mark, dict):
        return None
    generation, batch = mark.get("generation"), mark.get("batch")
    if isinstance(generation, int) and isinstance(batch, int):
        return generation, batch
    return None


def _open(location: str) -> DeltaTable | None:
    try:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError, TableNotFoundError
    except ImportError:
        raise DeltaLogError(f"cannot read the Delta table at {location}: {_ADVICE}") from None
    try:
        return DeltaTable(location)
    except TableNotFoundError:
        return None
    except (DeltaError, OSError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DeltaLogError(f"cannot read the Delta log of {location}: {first}") from None
