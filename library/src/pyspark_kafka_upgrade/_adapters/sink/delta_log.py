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

A backfill (``delta_writer.write_table_backfill``) is one commit too: its ``userMetadata`` is
its whole ``BackfillCommit`` (the windows it owns from then on), its ``txn`` action
application ``pyspark-kafka-upgrade/backfill`` with version = its number, so the next
backfill's number is known even once the log has dropped the commits that name the earlier.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade._core.formats.sink_log import SinkFileEntry
from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit
from pyspark_kafka_upgrade._domain.records.sink import GENERATION
from pyspark_kafka_upgrade._domain.records.sink_errors import DeltaLogError

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = [
    "BACKFILL_APP_ID",
    "TableLog",
    "app_id",
    "backfill_mark",
    "backfill_version",
    "commit_mark",
    "has_log",
    "last_batch",
    "mark_text",
    "read_table_log",
]

_APP_PREFIX = "pyspark-kafka-upgrade/generation-"
BACKFILL_APP_ID = "pyspark-kafka-upgrade/backfill"
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
    # The backfills the retained log names, oldest first, and the last number any took.
    backfills: tuple[BackfillCommit, ...] = ()
    last_backfill: int | None = None

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
    backfills: dict[int, BackfillCommit] = {}
    for commit in table.history():
        mark = commit_mark(commit.get("userMetadata"))
        if mark is not None:
            batches.setdefault(mark[0], set()).add(mark[1])
        backfill = backfill_mark(commit.get("userMetadata"))
        if backfill is not None:
            backfills[backfill.backfill] = backfill
    for generation in list(batches) + list(files):
        last = table.transaction_version(app_id(generation))
        if last is not None:
            batches.setdefault(generation, set()).add(int(last))
    return TableLog(
        location,
        version=table.version(),
        files={generation: tuple(entries) for generation, entries in sorted(files.items())},
        batches={generation: tuple(sorted(ids)) for generation, ids in sorted(batches.items())},
        backfills=tuple(backfills[number] for number in sorted(backfills)),
        last_backfill=_version(table, BACKFILL_APP_ID),
    )


def last_batch(location: str, generation: int) -> int | None:
    """The last batch ``generation`` committed to the table, from the snapshot alone (cheap
    at any age: no commit file is read for it); None when none."""
    table = _open(location)
    if table is None:
        return None
    return _version(table, app_id(generation))


def _version(table: DeltaTable, application: str) -> int | None:
    last = table.transaction_version(application)
    return None if last is None else int(last)


def backfill_version(location: str, backfill: int, *, within: int = 20) -> int | None:
    """The table version that committed ``backfill``, looked for among its ``within`` latest
    commits (a backfill's own report, right after it: running generations commit too)."""
    table = _open(location)
    if table is None:
        return None
    for commit in table.history(limit=within):
        mark = backfill_mark(commit.get("userMetadata"))
        if mark is not None and mark.backfill == backfill:
            return int(commit["version"])
    return None


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


def backfill_mark(text: object) -> BackfillCommit | None:
    """The backfill a commit's ``userMetadata`` records; None for any other commit."""
    if not isinstance(text, str) or '"backfill"' not in text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or "backfill" not in record:
        return None
    # Ours by its key: one that does not parse is damage to name, not a commit to skip.
    return BackfillCommit.from_json(record)


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
