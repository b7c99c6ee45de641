"""The checkpoint inspector: a hand-made checkpoint and sink next to a SQLite ledger.

The checkpoint committed batches 0-3 and planned batch 4; the ledger is filled to agree
with it, to lag, to lead, to differ, or with a gap marker. The sink's committed files are
checked against its log: one gone or of another size is named in one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import support.offset_stores as offset_stores
from pyspark_kafka_upgrade._adapters.ledger.sqlite_store import (
    SqliteOffsetStore,
)
from pyspark_kafka_upgrade._adapters.sink.opening import (
    open_sink,
)
from pyspark_kafka_upgrade._application.checkpoint_show.render import (
    render_report,
)
from pyspark_kafka_upgrade._application.checkpoint_show.report import (
    Verdict,
    inspect_checkpoint,
)
from pyspark_kafka_upgrade._core.formats.format_errors import (
    NotACheckpointError,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
)
from pyspark_kafka_upgrade._domain.records.sink import (
    Sink,
)

PIPELINE = "page-views"
QUERY_ID = offset_stores.make_batch().query_id
# Batch n: offsets per partition, the watermark it ran with, the next batch's watermark.
END_OFFSETS = {
    0: {0: 10, 1: 12},
    1: {0: 20, 1: 25},
    2: {0: 31, 1: 40},
    3: {0: 45, 1: 52},
    4: {0: 60, 1: 61},
}
WATERMARKS = {0: 0, 1: 0, 2: 7_000, 3: 21_000, 4: 36_000}
TIMESTAMPS = {batch: 1_700_000_000_000 + 1_000 * batch for batch in END_OFFSETS}
LAST_COMMITTED = 3


def canonical(batch: int) -> str:
    partitions = END_OFFSETS[batch]
    offsets = {PIPELINE: {str(p): partitions[p] for p in sorted(partitions)}}
    return json.dumps(offsets, separators=(",", ":"))


def python_spacing(batch: int) -> str:
    """How the Python Kafka source's offsets read in ``offsets/N``: ``json.dumps`` spacing."""
    partitions = END_OFFSETS[batch]
    return json.dumps({PIPELINE: {str(p): partitions[p] for p in sorted(partitions)}})


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_checkpoint(root: Path, *, first_retained: int = 0) -> str:
    """Batches 0-3 committed, 4 planned; files of batches before ``first_retained`` purged."""
    write(root / "metadata", json.dumps({"id": QUERY_ID}))
    for batch in END_OFFSETS:
        if batch < first_retained:
            continue
        metadata = {
            "batchWatermarkMs": WATERMARKS[batch],
            "batchTimestampMs": TIMESTAMPS[batch],
            "conf": {"spark.sql.shuffle.partitions": "1"},
        }
        write(
            root / "offsets" / str(batch),
            "\n".join(["v1", json.dumps(metadata), python_spacing(batch)]),
        )
        if batch <= LAST_COMMITTED:
            commit = {"nextBatchWatermarkMs": WATERMARKS[batch + 1]}
            write(root / "commits" / str(batch), "v1\n" + json.dumps(commit))
    write(root / "commits" / ".3.crc", "checksum")
    return str(root)


def write_sink(root: Path, batches: range) -> str:
    """Each batch commits one file of 500 bytes, and writes it."""
    for batch in batches:
        entry = {"path": f"file://{root}/part-{batch}.parquet", "size": 500, "action": "add"}
        write(root / "_spark_metadata" / str(batch), "v1\n" + json.dumps(entry))
        (root / f"part-{batch}.parquet").write_bytes(b"p" * 500)
    return str(root)


def sink_at(location: str | None) -> Sink | None:
    """The file sink with generation 1's output at ``location``, as ``--sink`` gives it."""
    return None if location is None else open_sink("parquet", location, located={1: location})


def record(batch: int, **changes: object) -> BatchRecord:
    facts: dict[str, object] = {
        "query_id": QUERY_ID,
        "start_offsets": canonical(batch - 1) if batch else None,
        "end_offsets": canonical(batch),
        "batch_watermark_ms": WATERMARKS[batch],
        "batch_timestamp_ms": TIMESTAMPS[batch],
    }
    return offset_stores.make_batch(batch, **(facts | changes))


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteOffsetStore]:
    with SqliteOffsetStore(tmp_path / "ledger.db") as store:
        # Another generation's records must not count.
        store.record_batch(offset_stores.make_batch(9, generation=2))
        yield store


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return write_checkpoint(tmp_path / "checkpoints" / "generation-1" / "aggregates")


def inspect(
    checkpoint: str, ledger: SqliteOffsetStore | None, sink: str | None = None
) -> dict[str, object]:
    report = inspect_checkpoint(
        checkpoint, sink=sink_at(sink), ledger=ledger, pipeline=PIPELINE, generation=1
    )
    data = json.loads(render_report(report, as_json=True))
    assert isinstance(data, dict)
    return data


def ledger_json(store: SqliteOffsetStore, **facts: object) -> dict[str, object]:
    """The report's ledger section: agreement on batches 0-3 unless ``facts`` say otherwise."""
    section: dict[str, object] = {
        "verdict": "agrees",
        "store": store.describe(),
        "last_batch_id": 3,
        "same_last_batch": True,
        "compared_batches": 4,
        "missing_batches": [],
        "ahead_batches": [],
        "mismatches": [],
        "gaps": [],
    }
    section.update(facts)
    return section


def test_a_ledger_that_agrees_and_the_whole_report_as_json(
    tmp_path: Path, checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in range(4):
        ledger.record_batch(record(batch))
    sink = write_sink(tmp_path / "output" / "generation-1", range(4))
    data = inspect(checkpoint, ledger, sink)
    assert data == {
        "checkpoint": checkpoint,
        "pipeline": PIPELINE,
        "generation": 1,
        "query_id": QUERY_ID,
        "last_committed": {
            "batch_id": 3,
            "log_version": 1,
            "batch_watermark_ms": 21_000,
            "batch_timestamp_ms": 1_700_000_003_000,
            "next_batch_watermark_ms": 36_000,
            "sources": [
                {"source_id": "0", "offsets": '{"page-views":{"0":45,"1":52}}', "kafka": True}
            ],
        },
        "planned_not_committed": [4],
        "retained_batches": [{"first": 0, "last": 3}],
        "sink": {
            "uri": sink,
            "batches": [{"first": 0, "last": 3}],
            "last_batch_id": 3,
            "compact_batch_id": None,
            "live_files": 4,
            "last_batch_matches_checkpoint": True,
            "damaged": [],
        },
        "ledger": ledger_json(ledger),
    }
    # Stable keys: the order is part of the output.
    assert list(data) == [
        "checkpoint",
        "pipeline",
        "generation",
        "query_id",
        "last_committed",
        "planned_not_committed",
        "retained_batches",
        "sink",
        "ledger",
    ]


def test_a_ledger_behind_names_the_missing_batches(
    checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in range(2):
        ledger.record_batch(record(batch))
    assert inspect(checkpoint, ledger)["ledger"] == ledger_json(
        ledger,
        verdict="ledger_behind",
        last_batch_id=1,
        same_last_batch=False,
        compared_batches=2,
        missing_batches=[{"first": 2, "last": 3}],
    )


def test_an_empty_ledger_is_behind_by_every_committed_batch(
    checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    assert inspect(checkpoint, ledger)["ledger"] == ledger_json(
        ledger,
        verdict="ledger_behind",
        last_batch_id=None,
        same_last_batch=False,
        compared_batches=0,
        missing_batches=[{"first": 0, "last": 3}],
    )


def test_a_ledger_ahead_records_a_batch_the_checkpoint_did_not_commit(
    checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in range(5):
        ledger.record_batch(record(batch))
    assert inspect(checkpoint, ledger)["ledger"] == ledger_json(
        ledger,
        verdict="ledger_ahead",
        last_batch_id=4,
        same_last_batch=False,
        ahead_batches=[{"first": 4, "last": 4}],
    )


def test_different_end_offsets_or_watermark_disagree(
    checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in range(4):
        ledger.record_batch(record(batch))
    ledger.record_batch(record(1, end_offsets='{"page-views":{"0":20,"1":24}}'))
    ledger.record_batch(record(2, batch_watermark_ms=11_000))
    assert inspect(checkpoint, ledger)["ledger"] == ledger_json(
        ledger,
        verdict="disagrees",
        mismatches=[
            {
                "batch_id": 1,
                "field": "end_offsets",
                "checkpoint": '{"page-views":{"0":20,"1":25}}',
                "ledger": '{"page-views":{"0":20,"1":24}}',
            },
            {
                "batch_id": 2,
                "field": "batch_watermark_ms",
                "checkpoint": "7000",
                "ledger": "11000",
            },
        ],
    )


def test_offsets_in_another_spacing_or_order_still_agree(
    checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in range(4):
        ledger.record_batch(record(batch))
    ledger.record_batch(record(3, end_offsets='{"page-views": {"1": 52, "0": 45}}'))
    assert inspect(checkpoint, ledger)["ledger"] == ledger_json(ledger)


def test_records_of_another_query_disagree(checkpoint: str, ledger: SqliteOffsetStore) -> None:
    for batch in range(4):
        ledger.record_batch(record(batch))
    ledger.record_batch(record(0, query_id="another-query"))
    section = inspect(checkpoint, ledger)["ledger"]
    assert isinstance(section, dict)
    assert section["verdict"] == "disagrees"
    assert section["mismatches"] == [
        {"batch_id": 0, "field": "query_id", "checkpoint": QUERY_ID, "ledger": "another-query"}
    ]


def test_a_gap_marker_is_reported_with_the_hole_it_explains(
    checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in (0, 1, 3):
        ledger.record_batch(record(batch))
    ledger.record_gap(offset_stores.make_gap(1_700_000_002_500, batch_id=2))
    assert inspect(checkpoint, ledger)["ledger"] == ledger_json(
        ledger,
        verdict="ledger_behind",
        compared_batches=3,
        missing_batches=[{"first": 2, "last": 2}],
        gaps=[
            {
                "batch_id": 2,
                "reason": "OffsetStoreUnavailableError: database is locked",
                "recorded_at_ms": 1_700_000_002_500,
            }
        ],
    )


def test_only_batches_whose_files_remain_are_compared(
    tmp_path: Path, ledger: SqliteOffsetStore
) -> None:
    # Spark purged the files of batches 0 and 1, so what the ledger says about them cannot be
    # checked; that they were recorded at all still counts.
    checkpoint = write_checkpoint(tmp_path / "purged", first_retained=2)
    for batch in range(4):
        ledger.record_batch(record(batch))
    ledger.record_batch(record(0, end_offsets='{"page-views":{"0":1,"1":1}}'))
    data = inspect(checkpoint, ledger)
    assert data["retained_batches"] == [{"first": 2, "last": 3}]
    assert data["ledger"] == ledger_json(ledger, compared_batches=2)


def test_without_a_ledger_only_the_checkpoint_is_read(checkpoint: str) -> None:
    assert inspect(checkpoint, None)["ledger"] == {
        "verdict": "no_ledger",
        "store": None,
        "last_batch_id": None,
        "same_last_batch": None,
        "compared_batches": 0,
        "missing_batches": [],
        "ahead_batches": [],
        "mismatches": [],
        "gaps": [],
    }


def test_a_sink_one_batch_ahead_is_reported(
    tmp_path: Path, checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    # The sink commits batch 4 before commits/4 is written: a crash in between.
    sink = write_sink(tmp_path / "output", range(5))
    data = inspect(checkpoint, ledger, sink)
    sink_section = data["sink"]
    assert isinstance(sink_section, dict)
    assert sink_section["last_batch_id"] == 4
    assert sink_section["last_batch_matches_checkpoint"] is False


def test_a_committed_file_gone_or_of_another_size_is_named_in_one_line_each(
    tmp_path: Path, checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in range(4):
        ledger.record_batch(record(batch))
    output = tmp_path / "output" / "generation-1"
    sink = write_sink(output, range(4))
    (output / "part-1.parquet").unlink()
    (output / "part-2.parquet").write_bytes(b"p" * 512)
    report = inspect_checkpoint(
        checkpoint, sink=sink_at(sink), ledger=ledger, pipeline=PIPELINE, generation=1
    )

    values, sentences = fields_and_sentences(render_report(report, as_json=False))
    assert values["live files"] == "4, 2 damaged"
    assert sentences == [
        "Batch 3 is the last committed one; it ran with watermark W = 21000 ms.",
        "Batch 4 was planned but not committed; a restart runs it again.",
        "Generation 1's committed file part-1.parquet is missing: the output was changed "
        "outside the pipeline; restore it from a backup.",
        "Generation 1's committed file part-2.parquet has 512 bytes where the sink log "
        "committed 500: the output was changed outside the pipeline after its batch "
        "committed; restore it from a backup.",
        "The ledger agrees with the checkpoint (4 batch(es) compared).",
    ]
    sink_section = inspect(checkpoint, ledger, sink)["sink"]
    assert isinstance(sink_section, dict)
    assert [(d["path"], d["damage"]) for d in sink_section["damaged"]] == [
        (f"file://{output}/part-1.parquet", "missing"),
        (f"file://{output}/part-2.parquet", "wrong size"),
    ]


def test_a_checkpoint_without_commits_has_no_last_batch(
    tmp_path: Path, ledger: SqliteOffsetStore
) -> None:
    root = tmp_path / "fresh"
    write(root / "metadata", json.dumps({"id": QUERY_ID}))
    data = inspect(str(root), ledger)
    assert data["last_committed"] is None
    assert data["planned_not_committed"] == []
    assert data["ledger"] == ledger_json(
        ledger, last_batch_id=None, compared_batches=0, same_last_batch=True
    )


def fields_and_sentences(text: str) -> tuple[dict[str, str], list[str]]:
    """The aligned ``name  value`` rows by name, and the sentences after the blank line."""
    fields, sentences = text.split("\n\n")
    rows = fields.splitlines()
    # Every value starts in the same column, two spaces after the longest name.
    column = len(rows[0]) - len(rows[0].split("  ")[-1].lstrip())
    assert all(row[column - 2 : column] == "  " and row[column] != " " for row in rows)
    return {row[:column].strip(): row[column:] for row in rows}, sentences.splitlines()


def test_the_human_report_states_the_key_numbers_in_aligned_fields(
    tmp_path: Path, checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in range(2):
        ledger.record_batch(record(batch))
    ledger.record_gap(offset_stores.make_gap(1_700_000_002_500, batch_id=2))
    sink = write_sink(tmp_path / "output", range(4))
    report = inspect_checkpoint(
        checkpoint, sink=sink_at(sink), ledger=ledger, pipeline=PIPELINE, generation=1
    )
    assert report.ledger.verdict is Verdict.LEDGER_BEHIND
    values, sentences = fields_and_sentences(render_report(report, as_json=False))
    assert values["query id"] == QUERY_ID
    assert values["last committed batch"] == "3"
    assert values["watermark (W)"] == "21000 ms (1970-01-01T00:00:21.000Z)"
    assert values["next batch watermark"] == "36000 ms (1970-01-01T00:00:36.000Z)"
    assert values["offsets of source 0"] == '{"page-views":{"0":45,"1":52}}'
    assert values["planned, not committed"] == "4"
    assert values["live files"] == "4"
    assert values["verdict"] == "ledger behind"
    assert values["missing batches"] == "2-3"
    assert values["compared batches"] == "2"
    assert values["gap"].startswith("batch 2: OffsetStoreUnavailableError")
    assert sentences == [
        "Batch 3 is the last committed one; it ran with watermark W = 21000 ms.",
        "Batch 4 was planned but not committed; a restart runs it again.",
        "The ledger is behind: committed batch(es) 2-3 are missing from it (2 batch(es) compared).",
        "The ledger recorded 1 failed write(s).",
    ]


def test_the_human_report_of_a_disagreement_names_the_batch(
    checkpoint: str, ledger: SqliteOffsetStore
) -> None:
    for batch in range(4):
        ledger.record_batch(record(batch))
    ledger.record_batch(record(2, end_offsets='{"page-views":{"0":30,"1":40}}'))
    report = inspect_checkpoint(
        checkpoint, sink=None, ledger=ledger, pipeline=PIPELINE, generation=1
    )
    values, sentences = fields_and_sentences(render_report(report, as_json=False))
    assert values["verdict"] == "disagrees"
    assert values["batch 2 end_offsets"] == (
        'checkpoint {"page-views":{"0":31,"1":40}}, ledger {"page-views":{"0":30,"1":40}}'
    )
    assert sentences[-1] == (
        "The ledger disagrees with the checkpoint on batch(es) 2 (4 batch(es) compared)."
    )


def test_inspecting_a_path_that_is_not_a_checkpoint_fails(tmp_path: Path) -> None:
    with pytest.raises(NotACheckpointError, match="the path does not exist"):
        inspect_checkpoint(
            str(tmp_path / "missing"), sink=None, ledger=None, pipeline=PIPELINE, generation=1
        )
