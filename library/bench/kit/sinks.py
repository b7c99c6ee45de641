"""Comparing two sinks' batches: what each wrote, row by row, and where a Delta batch's
time goes, from Spark's progress and the table's own log.

Pure but for :func:`delta_commits`, which reads the log a run left.
A Delta batch's phases are told by clocks the run leaves behind anyway, so nothing is timed
inside the writer (the library's own writer runs, unchanged):

* the batch's ``addBatch`` span: it ends ``commitOffsets`` before ``triggerExecution`` does
  (Spark writes the checkpoint's commit after the sink's), and began ``addBatch`` before;
* ``add.modificationTime``: when the batch's last data file was written;
* the commit file's mtime (``_delta_log/<version>.json``): when the log write ended;
* a checkpoint's mtime (``<version>.checkpoint*.parquet``, every 10 commits).

So the batch splits into: before the sink (read, plan: Spark's, as for any sink), write
(``addBatch`` start → last data file: the aggregation's job and the files, with Delta's
snapshot read for the transaction check before it), commit (last data file → commit file:
Delta's transaction, its conflict check and log write), after the commit (commit file →
``addBatch`` end: the snapshot update after it, and the checkpoint when one is due). Within
the write, the Spark jobs Delta ran itself (described ``Delta: <query>``; the session's
status store says when and how long): each batch, before its write job, one of three small
stages, 1-2 tasks each, the shape of Delta rebuilding its snapshot's state from the log.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from pyspark_kafka_upgrade._adapters.sink.delta_log import commit_mark

Row = tuple[Any, ...]
# Phases of a Delta batch, in the order they happen, in ms.
PHASES = ("before the sink", "write", "commit", "after the commit")
# Within the write: Delta's own Spark jobs (its snapshot, rebuilt for each batch).
DELTA_JOBS = "write: Delta's jobs"


@dataclass(frozen=True)
class Commit:
    """One commit of a table, as its log file tells it."""

    version: int
    # The batch id of the library's userMetadata {"generation": n, "batch": b}; None: none.
    batch: int | None
    # The newest add.modificationTime (ms); None: the commit added no file.
    files_done_ms: int | None
    # The commit file's and, when the version was checkpointed, its checkpoint's mtime (ms).
    written_ms: float
    checkpointed_ms: float | None = None


def parse_commit(
    version: int, text: str, written_ms: float, checkpointed_ms: float | None = None
) -> Commit:
    """A commit from its log file's text: one JSON action per line."""
    batch: int | None = None
    added: list[int] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            batch = _batch_of(action["commitInfo"].get("userMetadata"))
        elif "add" in action:
            added.append(int(action["add"]["modificationTime"]))
    return Commit(version, batch, max(added) if added else None, written_ms, checkpointed_ms)


def _batch_of(metadata: object) -> int | None:
    mark = commit_mark(metadata)
    return None if mark is None else mark[1]


def delta_commits(table: Path) -> list[Commit]:
    """Every commit in the local table's ``_delta_log``, oldest first."""
    log = table / "_delta_log"
    commits = []
    for path in sorted(log.glob("[0-9]" * 20 + ".json")):
        version = int(path.stem)
        checkpoints = sorted(log.glob(f"{path.stem}.checkpoint*.parquet"))
        checkpointed = max((c.stat().st_mtime for c in checkpoints), default=None)
        commits.append(
            parse_commit(
                version,
                path.read_text(encoding="utf-8"),
                path.stat().st_mtime * 1000,
                None if checkpointed is None else checkpointed * 1000,
            )
        )
    return commits


def trigger_start_ms(progress: Mapping[str, Any]) -> float:
    """When the batch's trigger began, from the progress' ISO time (UTC, ``Z``)."""
    return datetime.fromisoformat(str(progress["timestamp"])).timestamp() * 1000


def add_batch_span(progress: Mapping[str, Any]) -> tuple[float, float]:
    """When the batch's ``addBatch`` began and ended (ms): it ends ``commitOffsets`` before
    ``triggerExecution`` does, Spark writing the checkpoint's commit after the sink's."""
    durations = progress["durationMs"]
    end = trigger_start_ms(progress) + durations["triggerExecution"]
    add_end = end - durations.get("commitOffsets", 0)
    return add_end - durations["addBatch"], add_end


def delta_phases(progress: Mapping[str, Any], commit: Commit) -> dict[str, float]:
    """One batch's phases (:data:`PHASES`), in ms; they add up to ``triggerExecution``
    minus ``commitOffsets``. A commit without files has no write phase to tell: none."""
    if commit.files_done_ms is None:
        return {}
    add_start, add_end = add_batch_span(progress)
    return {
        "before the sink": add_start - trigger_start_ms(progress),
        "write": commit.files_done_ms - add_start,
        "commit": commit.written_ms - commit.files_done_ms,
        "after the commit": add_end - commit.written_ms,
    }


@dataclass(frozen=True)
class Job:
    """A Spark job the run's session ran: when it was submitted, for how long, and whether
    Delta ran it (its description starts ``Delta:``)."""

    submitted_ms: float
    duration_ms: float
    delta: bool


def jobs_ms(
    progress: Mapping[str, Any], jobs: Iterable[Job], *, delta: bool, until_ms: float | None = None
) -> float:
    """The time of the batch's jobs submitted in its ``addBatch`` (up to ``until_ms``):
    Delta's own (``delta``), or the others (the batch's aggregation and write)."""
    add_start, add_end = add_batch_span(progress)
    last = add_end if until_ms is None else until_ms
    return sum(
        job.duration_ms
        for job in jobs
        if job.delta == delta and add_start <= job.submitted_ms <= last
    )


def delta_jobs_ms(progress: Mapping[str, Any], commit: Commit, jobs: Iterable[Job]) -> float:
    """The time of the jobs Delta ran in the batch's write phase, before its data files:
    the snapshot Delta reads to check the batch's transaction, which a new commit makes
    Spark rebuild from the log every batch."""
    if commit.files_done_ms is None:
        return 0.0
    return jobs_ms(progress, jobs, delta=True, until_ms=commit.files_done_ms)


def median_jobs_ms(progress: Sequence[Mapping[str, Any]], jobs: Sequence[Job]) -> float | None:
    """The median, over the batches that read input, of the time of the jobs not Delta's
    in ``addBatch``: the aggregation's job that writes the files, whichever the sink.
    None without jobs to tell."""
    if not jobs:
        return None
    return statistics.median(jobs_ms(p, jobs, delta=False) for p in progress if p["numInputRows"])


def checkpoint_ms(commits: Iterable[Commit]) -> list[float]:
    """Each checkpoint's time after its commit file: what the batch that wrote it paid."""
    return [c.checkpointed_ms - c.written_ms for c in commits if c.checkpointed_ms is not None]


def median_phases(
    progress: Sequence[Mapping[str, Any]], commits: Sequence[Commit], jobs: Sequence[Job] = ()
) -> dict[str, float]:
    """The median of each phase over the batches that read input and committed files, and
    of :data:`DELTA_JOBS`, the part of the write Delta's own jobs took."""
    by_batch = {commit.batch: commit for commit in commits if commit.batch is not None}
    phases = []
    for p in progress:
        commit = by_batch.get(int(p["batchId"]))
        if not p["numInputRows"] or commit is None:
            continue
        found = delta_phases(p, commit)
        if found:
            phases.append({**found, DELTA_JOBS: delta_jobs_ms(p, commit, jobs)})
    if not phases:
        return {}
    return {name: statistics.median(found[name] for found in phases) for name in phases[0]}


def median_duration_s(progress: Sequence[Mapping[str, Any]], key: str) -> float:
    """The median of ``durationMs[key]`` over the batches that read input, in s."""
    values = [int(p["durationMs"].get(key, 0)) for p in progress if p["numInputRows"]]
    return statistics.median(values) / 1000


def rows_of(table: pa.Table, *, leave_out: Sequence[str] = ()) -> list[Row]:
    """A table's rows, sorted, columns by name: the same windows compare equal whichever
    sink wrote them. Times become UTC microseconds: Spark's parquet reads naive, Delta's
    schema says UTC."""
    names = sorted(name for name in table.column_names if name not in leave_out)
    rows = [tuple(_plain(row[name]) for name in names) for row in table.select(names).to_pylist()]
    return sorted(rows, key=repr)


def _plain(value: object) -> object:
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return round(moment.timestamp() * 1_000_000)
    return value


def difference(ours: Sequence[Row], theirs: Sequence[Row]) -> str | None:
    """None when both hold the same rows, as many times each; else what differs, briefly."""
    only_ours, only_theirs = Counter(ours) - Counter(theirs), Counter(theirs) - Counter(ours)
    if not only_ours and not only_theirs:
        return None
    return (
        f"{len(ours)} rows against {len(theirs)}: {only_ours.total()} only in the first "
        f"(e.g. {min(only_ours, key=repr, default=None)}), {only_theirs.total()} only in the "
        f"second (e.g. {min(only_theirs, key=repr, default=None)})"
    )
