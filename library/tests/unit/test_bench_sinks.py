"""Comparing two sinks' batches: their rows, and a Delta batch's phases from its log."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from bench.kit.sinks import (
    DELTA_JOBS,
    PHASES,
    Commit,
    Job,
    checkpoint_ms,
    delta_commits,
    delta_jobs_ms,
    delta_phases,
    difference,
    jobs_ms,
    median_duration_s,
    median_jobs_ms,
    median_phases,
    parse_commit,
    rows_of,
)

T0 = 1_800_000_000_000  # the trigger's start, in ms
T0_ISO = "2027-01-15T08:00:00.000Z"


def log_text(batch: int | None, *added_ms: int) -> str:
    info: dict[str, object] = {"timestamp": T0, "operation": "WRITE"}
    if batch is not None:
        info["userMetadata"] = json.dumps({"generation": 1, "batch": batch})
    lines = [{"commitInfo": info}, {"txn": {"appId": "x", "version": batch}}]
    lines += [{"add": {"path": f"p{ms}", "modificationTime": ms}} for ms in added_ms]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def progress(batch: int, rows: int = 10, **durations: int) -> dict[str, object]:
    return {"batchId": batch, "numInputRows": rows, "timestamp": T0_ISO, "durationMs": durations}


def test_a_commit_says_its_batch_and_when_its_last_file_was_written() -> None:
    commit = parse_commit(3, log_text(7, T0 + 500, T0 + 800), written_ms=T0 + 900.5)

    assert commit == Commit(3, 7, T0 + 800, T0 + 900.5)
    assert parse_commit(0, log_text(None), T0) == Commit(0, None, None, T0)


def test_a_commit_without_the_librarys_mark_has_no_batch() -> None:
    text = json.dumps({"commitInfo": {"userMetadata": "not json"}})

    assert parse_commit(1, text, T0).batch is None


def test_the_phases_split_the_batch_up_to_the_checkpoints_commit() -> None:
    # The trigger ran 1000 ms: 100 before the sink, addBatch 850, then the checkpoint's commit.
    durations = progress(4, triggerExecution=1000, addBatch=850, commitOffsets=50)["durationMs"]
    commit = Commit(9, 4, files_done_ms=T0 + 700, written_ms=T0 + 880)

    phases = delta_phases(progress(4, **durations), commit)  # type: ignore[arg-type]

    assert list(phases) == list(PHASES)
    assert phases == {
        "before the sink": 100,
        "write": 600,
        "commit": 180,
        "after the commit": 70,
    }
    assert sum(phases.values()) == 1000 - 50


def test_a_commit_without_files_has_no_phases() -> None:
    no_files = Commit(2, 4, files_done_ms=None, written_ms=T0 + 500)

    assert delta_phases(progress(4, triggerExecution=600, addBatch=500), no_files) == {}


def test_the_median_phases_come_from_batches_with_input_joined_by_batch_id() -> None:
    runs = [
        progress(0, triggerExecution=1000, addBatch=900),
        progress(1, triggerExecution=1000, addBatch=900),
        progress(2, rows=0, triggerExecution=5000, addBatch=4900),  # no input: left out
        progress(3, triggerExecution=1000, addBatch=900),  # no commit of its own: left out
    ]
    commits = [
        Commit(0, 0, T0 + 500, T0 + 700),
        Commit(1, 1, T0 + 600, T0 + 900),
        Commit(2, 2, T0 + 4000, T0 + 4500),
        Commit(3, None, T0 + 100, T0 + 200),
    ]

    jobs = [Job(T0 + 150, 200, delta=True), Job(T0 + 150, 100, delta=True)]

    assert median_phases(runs, commits, jobs) == {
        "before the sink": 100,
        "write": 450,
        "commit": 250,
        "after the commit": 200,
        DELTA_JOBS: 300,
    }
    assert median_phases(runs, []) == {}


def test_delta_jobs_count_when_submitted_between_the_sinks_start_and_its_last_file() -> None:
    # addBatch runs from T0 + 100 to T0 + 950; the last data file is written at T0 + 700.
    batch = progress(4, triggerExecution=1000, addBatch=850, commitOffsets=50)
    commit = Commit(9, 4, files_done_ms=T0 + 700, written_ms=T0 + 880)
    jobs = [
        Job(T0 + 50, 1000, delta=True),  # before the sink: the previous batch's
        Job(T0 + 100, 40, delta=True),
        Job(T0 + 150, 300, delta=False),  # the write's own job, not Delta's
        Job(T0 + 690, 2, delta=True),
        Job(T0 + 900, 500, delta=True),  # after the files: not the write's
    ]

    assert delta_jobs_ms(batch, commit, jobs) == 42
    assert delta_jobs_ms(batch, Commit(9, 4, None, T0 + 880), jobs) == 0


def test_the_median_duration_counts_batches_with_input_only() -> None:
    runs = [
        progress(0, addBatch=300),
        progress(1, addBatch=500),
        progress(2, rows=0, addBatch=9000),
        progress(3, addBatch=400),
    ]

    assert median_duration_s(runs, "addBatch") == pytest.approx(0.4)
    assert median_duration_s(runs, "walCommit") == 0


def test_a_checkpoints_time_is_counted_from_its_commit_file() -> None:
    commits = [Commit(9, 9, T0, T0 + 100), Commit(10, 10, T0, T0 + 200, T0 + 450)]

    assert checkpoint_ms(commits) == [250]


def test_the_commits_are_read_from_the_tables_log_with_their_files_mtimes(
    tmp_path: Path,
) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    for version in range(11):
        path = log / f"{version:020d}.json"
        path.write_text(log_text(version, T0 + version))
        os.utime(path, ns=(0, (T0 + 100 * version) * 1_000_000))
    checkpoint = log / f"{10:020d}.checkpoint.parquet"
    checkpoint.write_bytes(b"")
    os.utime(checkpoint, ns=(0, (T0 + 1_300) * 1_000_000))
    (log / "_last_checkpoint").write_text("{}")

    commits = delta_commits(tmp_path)

    assert [c.version for c in commits] == list(range(11))
    assert commits[3] == Commit(3, 3, T0 + 3, T0 + 300)
    assert commits[10].checkpointed_ms == T0 + 1_300
    assert checkpoint_ms(commits) == [300]


def test_rows_compare_equal_whichever_sink_wrote_them() -> None:
    naive = datetime(2027, 1, 15, 8, 0)
    spark_parquet = pa.table(
        {"window_start": [naive, naive], "article_id": ["b", "a"], "views": [2, 1]}
    )
    delta = pa.table(
        {
            "views": [1, 2],
            "article_id": ["a", "b"],
            "generation": [1, 1],
            "window_start": pa.array([naive.replace(tzinfo=UTC)] * 2, pa.timestamp("us", tz="UTC")),
        }
    )

    ours, theirs = rows_of(spark_parquet), rows_of(delta, leave_out=("generation",))

    assert ours == theirs
    # Columns by name: article_id, views, window_start (UTC microseconds).
    assert ours[0] == ("a", 1, round(naive.replace(tzinfo=UTC).timestamp() * 1_000_000))
    assert difference(ours, theirs) is None


def test_a_difference_names_what_only_one_side_holds() -> None:
    assert difference([(1, "a")], [(1, "a")]) is None
    found = difference([(1, "a"), (2, "b"), (2, "b")], [(1, "a"), (2, "b"), (3, "c")])

    assert found is not None
    assert found.startswith("3 rows against 3: 1 only in the first (e.g. (2, 'b')), ")
    assert found.endswith("1 only in the second (e.g. (3, 'c'))")


def test_the_jobs_of_a_batch_are_those_submitted_in_its_add_batch() -> None:
    # addBatch runs from T0 + 100 to T0 + 950.
    batch = progress(4, triggerExecution=1000, addBatch=850, commitOffsets=50)
    jobs = [
        Job(T0 + 99, 1000, delta=False),  # before the sink
        Job(T0 + 100, 300, delta=False),
        Job(T0 + 120, 70, delta=True),
        Job(T0 + 950, 5, delta=False),
        Job(T0 + 951, 500, delta=False),  # after it: the next batch's
    ]

    assert jobs_ms(batch, jobs, delta=False) == 305
    assert jobs_ms(batch, jobs, delta=True) == 70
    assert jobs_ms(batch, jobs, delta=False, until_ms=T0 + 500) == 300


def test_the_median_write_job_counts_batches_with_input_only() -> None:
    runs = [
        progress(0, triggerExecution=1000, addBatch=900),
        {**progress(1, triggerExecution=1000, addBatch=900), "timestamp": "2027-01-15T08:00:01Z"},
        {
            **progress(2, rows=0, triggerExecution=1000, addBatch=900),
            "timestamp": "2027-01-15T08:00:02Z",
        },
    ]
    jobs = [
        Job(T0 + 200, 400, delta=False),
        Job(T0 + 1_200, 600, delta=False),
        Job(T0 + 2_200, 9_000, delta=False),
    ]

    assert median_jobs_ms(runs, jobs) == 500
    assert median_jobs_ms(runs, []) is None
