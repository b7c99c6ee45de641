"""The checkpoint reader against a checkpoint Spark really wrote, and against hand-made files.

The real checkpoint comes from a small file-source query: one JSON file per batch,
a 10 s tumbling window with a 5 s watermark delay, append mode into parquet. Its offset
and commit logs, its sink log and its output are compared with what Spark itself reports
(``recentProgress``, ``spark.read.parquet``) and with the rules in FACTS section 6.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryProgress

import pyspark_kafka_upgrade.testing._waiting as waiting
from pyspark_kafka_upgrade._adapters.checkpoint.reader import read_checkpoint
from pyspark_kafka_upgrade._adapters.sink.log import read_sink_log
from pyspark_kafka_upgrade._adapters.storage.filesystem import (
    open_location,
)
from pyspark_kafka_upgrade._core.formats.format_errors import (
    CorruptCheckpointError,
    NotACheckpointError,
    UnsupportedLogVersionError,
)
from pyspark_kafka_upgrade._core.formats.offset_log import (
    SourceOffset,
)
from pyspark_kafka_upgrade._domain.errors import (
    PipelineError,
)

QUERY_ID = "8a1f3c52-6f0e-4d3b-9a57-0c2b1e4d5f60"


def compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def metadata_line(watermark_ms: int, timestamp_ms: int = 1_700_000_000_000) -> str:
    return compact_json(
        {
            "batchWatermarkMs": watermark_ms,
            "batchTimestampMs": timestamp_ms,
            "conf": {"spark.sql.shuffle.partitions": "1"},
        }
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_checkpoint(
    root: Path,
    offsets: dict[int, str],
    commits: dict[int, int],
    *,
    query_id: str | None = QUERY_ID,
) -> Path:
    """A checkpoint with ``offsets/N`` texts as given and ``commits/N`` with their watermarks."""
    if query_id is not None:
        write(root / "metadata", compact_json({"id": query_id}))
    for batch, text in offsets.items():
        write(root / "offsets" / str(batch), text)
    for batch, next_watermark in commits.items():
        commit = compact_json({"nextBatchWatermarkMs": next_watermark})
        write(root / "commits" / str(batch), f"v1\n{commit}")
    return root


def kafka_batch(watermark_ms: int, offsets: str) -> str:
    return f"v1\n{metadata_line(watermark_ms)}\n{offsets}"


def sink_line(path: str, action: str = "add", size: int = 100) -> str:
    return json.dumps(
        {
            "path": path,
            "size": size,
            "isDir": False,
            "modificationTime": 1_700_000_000_000,
            "blockReplication": 1,
            "blockSize": 33554432,
            "action": action,
        },
        separators=(",", ":"),
    )


# --- a checkpoint Spark wrote -----------------------------------------------------------

WINDOW_S = 10
DELAY_MS = 5_000
# One file per batch. Max event times 4 s, 12 s, 26 s, 41 s move the watermark to
# 0 (4 s - 5 s is below the initial 0), 7 s, 21 s and 36 s.
EVENT_SECONDS = [[1, 4], [12], [26], [41]]


def iso_to_ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


@pytest.fixture
def restored_conf(spark: SparkSession) -> Iterator[dict[str, str]]:
    """SQL confs a test sets on the shared session, unset afterwards."""
    conf: dict[str, str] = {}
    yield conf
    for key in conf:
        spark.conf.unset(key)


def run_file_query(
    spark: SparkSession, tmp_path: Path, conf: dict[str, str]
) -> tuple[Path, Path, str, dict[int, StreamingQueryProgress]]:
    """Run the query to the end; return checkpoint, sink, query id and progress by batch."""
    source, checkpoint, sink = tmp_path / "in", tmp_path / "checkpoint", tmp_path / "out"
    source.mkdir()
    for index, seconds in enumerate(EVENT_SECONDS):
        lines = [json.dumps({"ts": second * 1000, "key": "a"}) for second in seconds]
        path = write(source / f"events-{index}.json", "\n".join(lines) + "\n")
        # The file source takes the oldest files first: make that order the intended one.
        os.utime(path, (1_600_000_000 + index, 1_600_000_000 + index))
    for key, value in conf.items():
        spark.conf.set(key, value)
    counts = (
        spark.readStream.schema("ts long, key string")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .select((F.col("ts") / 1000).cast("timestamp").alias("t"), "key")
        .withWatermark("t", f"{DELAY_MS // 1000} seconds")
        .groupBy(F.window("t", f"{WINDOW_S} seconds").alias("w"), "key")
        .count()
        .select(F.col("w.start").alias("start"), F.col("w.end").alias("end"), "key", "count")
    )
    query = (
        counts.writeStream.format("parquet")
        .option("path", str(sink))
        .option("checkpointLocation", str(checkpoint))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    try:
        waiting.wait_until(
            lambda: not query.isActive, timeout=180, message="the query did not finish"
        )
    finally:
        query.stop()
    assert query.exception() is None
    progress = {p.batchId: p for p in query.recentProgress}
    return checkpoint, sink, str(query.id), progress


@pytest.mark.parametrize("log_version", [1, 2])
def test_a_checkpoint_spark_wrote_reads_as_spark_reports_it(
    spark: SparkSession,
    tmp_path: Path,
    restored_conf: dict[str, str],
    log_version: int,
) -> None:
    # Compact the sink log every 3 batches, so that batch 2's log is a compact file.
    restored_conf["spark.sql.streaming.fileSink.log.compactInterval"] = "3"
    if log_version == 2:
        restored_conf["spark.sql.streaming.offsetLog.formatVersion"] = "2"
    checkpoint, sink, query_id, progress = run_file_query(spark, tmp_path, restored_conf)

    state = read_checkpoint(str(checkpoint))
    if log_version == 2 and state.offsets[0].log_version == 1:
        pytest.skip("this Spark writes no offset log v2 (spark.sql.streaming.offsetLog)")

    # Four data batches, then the no-data batch Spark runs because the watermark moved.
    assert sorted(progress) == [0, 1, 2, 3, 4]
    assert list(state.offsets) == [0, 1, 2, 3, 4]
    assert list(state.commits) == [0, 1, 2, 3, 4]
    assert [p.numInputRows for p in progress.values()] == [2, 1, 1, 1, 0]
    assert state.query_id == query_id
    assert state.last_committed_batch == 4
    assert state.planned_not_committed == ()
    assert state.retained_batches == (0, 1, 2, 3, 4)

    # nextBatchWatermarkMs = max event time so far - delay, never below the last value.
    expected_next, current, latest = [], 0, 0
    for seconds in [*EVENT_SECONDS, []]:
        latest = max([latest, *(second * 1000 for second in seconds)])
        current = max(current, latest - DELAY_MS)
        expected_next.append(current)
    assert expected_next == [0, 7_000, 21_000, 36_000, 36_000]
    assert [c.next_batch_watermark_ms for c in state.commits.values()] == expected_next
    for batch, entry in state.offsets.items():
        assert entry.batch_id == batch
        assert entry.log_version == log_version
        # batchWatermarkMs of offsets/N is the watermark Spark reports for batch N ...
        assert entry.batch_watermark_ms == iso_to_ms(progress[batch].eventTime["watermark"])
        # ... and the previous commit's nextBatchWatermarkMs.
        assert entry.batch_watermark_ms == (expected_next[batch - 1] if batch else 0)
        assert entry.batch_timestamp_ms > 0
        assert entry.conf["spark.sql.streaming.aggregation.stateFormatVersion"] == "2"
        if log_version == 1:
            # Spark 4.2's offset log v2 leaves the shuffle partitions out of its conf.
            assert entry.conf["spark.sql.shuffle.partitions"] == "1"
        (source,) = entry.sources
        assert source.source_id == "0"
        assert not source.is_kafka
        assert source.offsets is not None
        assert json.loads(source.offsets) == json.loads(progress[batch].sources[0].endOffset)
        assert json.loads(source.offsets) == {"logOffset": min(batch, 3)}
        assert entry.kafka_offsets is None
    assert state.watermark_ms == 36_000
    assert state.next_watermark_ms == 36_000

    log = read_sink_log(str(sink))
    assert log.batch_ids == (0, 1, 2, 3, 4)
    assert log.compact_batch_id == 2
    assert log.last_batch_id == state.last_committed_batch
    listed = {entry.path for entry in log.files}
    assert len(log.files) == 5  # one file per batch, the no-data batch's too
    assert listed == set(spark.read.parquet(str(sink)).inputFiles())
    for file in log.files:
        location = open_location(file.path)
        assert location.exists()
        assert location.info().size == file.size
    # Emitted are exactly the windows that end at or before W of the last batch.
    rows = spark.read.parquet(str(sink)).orderBy("start").collect()
    assert [(row["end"].timestamp() * 1000, row["count"]) for row in rows] == [
        (10_000, 2),
        (20_000, 1),
        (30_000, 1),
    ]
    assert all(row["end"].timestamp() * 1000 <= state.watermark_ms for row in rows)


# --- offset log ----------------------------------------------------------------------------


def test_v1_kafka_offsets_in_either_spacing_read_as_the_same_canonical_text(
    tmp_path: Path,
) -> None:
    root = write_checkpoint(
        tmp_path / "ck",
        {
            0: kafka_batch(0, '{"page-views":{"0":5,"1":7}}'),  # the built-in source
            1: kafka_batch(3_000, '{"page-views": {"1": 9, "0": 6}}'),  # the Python source
        },
        {0: 3_000, 1: 8_000},
    )
    state = read_checkpoint(str(root))
    first, second = state.offsets[0], state.offsets[1]
    assert first.sources == (SourceOffset("0", '{"page-views":{"0":5,"1":7}}', is_kafka=True),)
    assert second.sources == (SourceOffset("0", '{"page-views":{"0":6,"1":9}}', is_kafka=True),)
    assert second.sources[0].kafka_offsets() == {"page-views": {0: 6, 1: 9}}
    assert second.kafka_offsets == '{"page-views":{"0":6,"1":9}}'
    assert (second.log_version, second.batch_watermark_ms) == (1, 3_000)
    assert second.batch_timestamp_ms == 1_700_000_000_000
    assert second.conf == {"spark.sql.shuffle.partitions": "1"}
    assert state.query_id == QUERY_ID
    assert (state.last_committed_batch, state.watermark_ms, state.next_watermark_ms) == (
        1,
        3_000,
        8_000,
    )


def test_sources_without_an_offset_or_not_from_kafka_are_kept_as_they_are(
    tmp_path: Path,
) -> None:
    sources = ["-", '{"logOffset":3}', "12", '{"b":{"0":1}}', '{"a":{"2":4}}']
    text = "\n".join(["v1", metadata_line(0), *sources])
    root = write_checkpoint(tmp_path / "ck", {0: text}, {})
    (entry,) = read_checkpoint(str(root)).offsets.values()
    assert entry.sources == (
        SourceOffset("0", None, is_kafka=False),
        SourceOffset("1", '{"logOffset":3}', is_kafka=False),
        SourceOffset("2", "12", is_kafka=False),
        SourceOffset("3", '{"b":{"0":1}}', is_kafka=True),
        SourceOffset("4", '{"a":{"2":4}}', is_kafka=True),
    )
    assert entry.sources[1].kafka_offsets() is None
    # The Kafka sources together, in canonical order: the form the ledger records.
    assert entry.kafka_offsets == '{"a":{"2":4},"b":{"0":1}}'


def test_v2_names_its_sources(tmp_path: Path) -> None:
    metadata = (
        '{"batchWatermarkMs":21000,"batchTimestampMs":1700000000123,'
        '"conf":{"spark.sql.shuffle.partitions":"4"},'
        '"sourceMetadataInfo":{"views":{"sourceId":"views","providerName":"kafka",'
        '"apiVersion":"v2"}}}'
    )
    sources = ['views:{"page-views": {"0": 20}}', 'files:{"logOffset":2}', "idle:-"]
    text = "\n".join(["v2", metadata, *sources])
    root = write_checkpoint(tmp_path / "ck", {4: text}, {4: 30_000})
    state = read_checkpoint(str(root))
    entry = state.offsets[4]
    assert entry.log_version == 2
    assert (entry.batch_watermark_ms, entry.batch_timestamp_ms) == (21_000, 1_700_000_000_123)
    assert entry.conf == {"spark.sql.shuffle.partitions": "4"}
    assert entry.sources == (
        SourceOffset("views", '{"page-views":{"0":20}}', is_kafka=True),
        SourceOffset("files", '{"logOffset":2}', is_kafka=False),
        SourceOffset("idle", None, is_kafka=False),
    )
    assert entry.kafka_offsets == '{"page-views":{"0":20}}'
    assert state.watermark_ms == 21_000


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (f"v2\n{metadata_line(0)}\n" + '{"t":{"0":1}}', 'line 3 is \'{"t":{"0":1}}\'; expected'),
        (f"v2\n{metadata_line(0)}\n" + ':{"t":{"0":1}}', "expected <source id>:<offset>"),
        ('v2\n\n0:{"t":{"0":1}}', "empty line 2; v2 requires batch metadata"),
        (f"v2\n{metadata_line(0)}\na:-\na:" + '{"t":{"0":1}}', "names source 'a' more than once"),
    ],
)
def test_a_broken_v2_file_is_corrupt(tmp_path: Path, text: str, complaint: str) -> None:
    root = write_checkpoint(tmp_path / "ck", {0: text}, {})
    with pytest.raises(CorruptCheckpointError, match="offsets/0") as caught:
        read_checkpoint(str(root))
    assert complaint in str(caught.value)


@pytest.mark.parametrize("directory", ["offsets", "commits"])
def test_an_unknown_log_version_is_refused_by_name(tmp_path: Path, directory: str) -> None:
    root = write_checkpoint(tmp_path / "ck", {0: kafka_batch(0, '{"t":{"0":1}}')}, {0: 0})
    write(root / directory / "0", f"v3\n{metadata_line(0)}\n" + '{"t":{"0":1}}')
    with pytest.raises(UnsupportedLogVersionError) as caught:
        read_checkpoint(str(root))
    message = str(caught.value)
    assert f"{root}/{directory}/0 is in log format v3" in message
    assert "reads only v1 and v2" in message
    assert "newer Spark" in message
    assert isinstance(caught.value, PipelineError)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "is empty; expected a version line such as v1"),
        ("version 1\n{}", "starts with 'version 1'; expected a version line such as v1"),
        ("v0\n{}", "starts with 'v0'"),
        ("v1", "ends after its version line"),
        ('v1\n{"batchWatermarkMs":7000,"batchTi', "line 2 is not valid JSON"),
        ('v1\n[1]\n{"t":{"0":1}}', "line 2 must be a JSON object"),
        ('v1\n{"batchWatermarkMs":"7000"}\n-', "'batchWatermarkMs' must be an integer"),
        ('v1\n{"conf":{"a":1}}\n-', "'conf' must map names to strings"),
        (f"v1\n{metadata_line(0)}\n" + '{"t":{"0":5', "offset of source 0 is not valid JSON"),
        (f"v1\n{metadata_line(0)}\n-\n\n", "line 4: the offset of source 1 is not valid JSON"),
    ],
)
def test_a_truncated_or_damaged_offsets_file_is_named(
    tmp_path: Path, text: str, complaint: str
) -> None:
    root = write_checkpoint(tmp_path / "ck", {0: kafka_batch(0, "-"), 1: text}, {0: 0})
    with pytest.raises(CorruptCheckpointError) as caught:
        read_checkpoint(str(root))
    assert str(caught.value).startswith(f"{root}/offsets/1")
    assert complaint in str(caught.value)


def test_a_file_that_is_not_utf8_is_corrupt(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ck", {}, {0: 0})
    (root / "commits" / "0").write_bytes(b'v1\n{"nextBatchWatermarkMs":\xff}')
    with pytest.raises(
        CorruptCheckpointError, match=r"commits/0 is not UTF-8 text \(byte 27 is 0xff\)"
    ):
        read_checkpoint(str(root))


def test_a_damaged_commit_file_is_named(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ck", {0: kafka_batch(0, "-")}, {})
    write(root / "commits" / "0", 'v1\n{"nextBatchWatermarkMs":70')
    with pytest.raises(CorruptCheckpointError, match=r"commits/0 line 2 is not valid JSON"):
        read_checkpoint(str(root))


def test_a_commit_without_metadata_means_watermark_zero_as_in_spark(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ck", {0: kafka_batch(0, "-")}, {})
    write(root / "commits" / "0", "v1")
    state = read_checkpoint(str(root))
    assert state.commits[0].next_batch_watermark_ms == 0
    assert state.commits[0].log_version == 1


def test_a_corrupt_metadata_file_is_named(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ck", {}, {}, query_id=None)
    write(root / "metadata", '{"identifier":"x"}')
    with pytest.raises(CorruptCheckpointError, match=r"metadata has no query id"):
        read_checkpoint(str(root))


# --- committed or not ----------------------------------------------------------------------


def test_a_batch_planned_but_not_committed_is_not_the_last_committed_one(
    tmp_path: Path,
) -> None:
    root = write_checkpoint(
        tmp_path / "ck",
        {
            0: kafka_batch(0, '{"t":{"0":1}}'),
            1: kafka_batch(0, '{"t":{"0":4}}'),
            2: kafka_batch(11_000, '{"t":{"0":9}}'),
            3: kafka_batch(22_000, '{"t":{"0":12}}'),
        },
        {0: 0, 1: 11_000, 2: 22_000},
    )
    state = read_checkpoint(str(root))
    assert state.last_committed_batch == 2
    assert state.planned_not_committed == (3,)
    # W comes from offsets/2, not from commits/2 (22 000, the next batch's watermark).
    assert state.watermark_ms == 11_000
    assert state.next_watermark_ms == 22_000
    assert state.last_committed is not None
    assert state.last_committed.kafka_offsets == '{"t":{"0":9}}'
    assert state.retained_batches == (0, 1, 2)


def test_old_entries_purged_by_spark_leave_the_retained_ones(tmp_path: Path) -> None:
    root = write_checkpoint(
        tmp_path / "ck",
        {5: kafka_batch(1_000, '{"t":{"0":50}}'), 6: kafka_batch(2_000, '{"t":{"0":60}}')},
        {4: 1_000, 5: 2_000, 6: 2_000},
    )
    state = read_checkpoint(str(root))
    assert state.retained_batches == (5, 6)
    assert (state.last_committed_batch, state.watermark_ms) == (6, 2_000)


def test_a_last_commit_whose_offsets_file_is_gone_has_no_watermark(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ck", {}, {3: 9_000})
    state = read_checkpoint(str(root))
    assert state.last_committed_batch == 3
    assert state.last_committed is None
    assert state.watermark_ms is None
    assert state.next_watermark_ms == 9_000


def test_a_started_query_without_batches_is_a_checkpoint_with_nothing_committed(
    tmp_path: Path,
) -> None:
    root = write_checkpoint(tmp_path / "ck", {}, {})
    state = read_checkpoint(str(root))
    assert state.query_id == QUERY_ID
    assert (state.offsets, state.commits) == ({}, {})
    assert state.last_committed_batch is None
    assert (state.watermark_ms, state.next_watermark_ms) == (None, None)
    assert state.planned_not_committed == ()


def test_temporary_checksum_and_other_files_are_ignored(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ck", {0: kafka_batch(0, '{"t":{"0":1}}')}, {0: 0})
    junk = "not a log file"
    for directory in ("offsets", "commits"):
        write(root / directory / ".1.5f0e3c2a-1b2c-4d5e-8f90-123456789abc.tmp", junk)
        write(root / directory / ".0.crc", junk)
        write(root / directory / "01", junk)
        write(root / directory / "1.tmp", junk)
        write(root / directory / "-1", junk)
        write(root / directory / "notes.txt", junk)
    state = read_checkpoint(str(root))
    assert list(state.offsets) == [0]
    assert list(state.commits) == [0]


# --- not a checkpoint ----------------------------------------------------------------------


def test_a_missing_path_is_not_a_checkpoint(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(NotACheckpointError) as caught:
        read_checkpoint(str(missing))
    assert str(caught.value) == (
        f"no checkpoint at {missing}: the path does not exist; expected a directory with a "
        "'metadata' file and an 'offsets' directory"
    )


def test_a_directory_of_other_things_is_not_a_checkpoint(tmp_path: Path) -> None:
    write(tmp_path / "out" / "part-0.parquet", "x")
    write(tmp_path / "out" / "_spark_metadata" / "0", "v1")
    with pytest.raises(NotACheckpointError) as caught:
        read_checkpoint(str(tmp_path / "out"))
    assert str(caught.value) == (
        f"{tmp_path / 'out'} is not a Spark checkpoint: expected a 'metadata' file and an "
        "'offsets' directory, found only: _spark_metadata, part-0.parquet"
    )


def test_an_empty_directory_or_a_file_is_not_a_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotACheckpointError, match="found an empty directory"):
        read_checkpoint(str(tmp_path / "empty"))
    file = write(tmp_path / "file", "{}")
    with pytest.raises(NotACheckpointError, match=f"{file} is a file, not a checkpoint"):
        read_checkpoint(str(file))


# --- sink log ------------------------------------------------------------------------------


def test_a_compacted_sink_log_with_deletes_lists_the_live_files(tmp_path: Path) -> None:
    log = tmp_path / "out" / "_spark_metadata"
    # Batch 0's file is already deleted after compaction; batch 1's is not yet.
    write(log / "1", "v1\n" + sink_line("file:///out/b"))
    write(
        log / "2.compact",
        "\n".join(
            [
                "v1",
                sink_line("file:///out/a"),
                sink_line("file:///out/b"),
                sink_line("file:///out/a", "delete"),
                sink_line("file:///out/c", size=3),
            ]
        ),
    )
    write(log / "3", "v1\n" + sink_line("file:///out/d"))
    write(
        log / "4",
        "\n".join(["v1", sink_line("file:///out/b", "delete"), sink_line("file:///out/e")]),
    )
    write(log / ".5.crc", "junk")
    write(log / ".5.0f9a.tmp", "junk")
    sink = read_sink_log(str(tmp_path / "out"))
    assert sink.batch_ids == (1, 2, 3, 4)
    assert (sink.first_batch_id, sink.last_batch_id, sink.compact_batch_id) == (1, 4, 2)
    assert [entry.path for entry in sink.files] == [
        "file:///out/c",
        "file:///out/d",
        "file:///out/e",
    ]
    assert sink.files[0].size == 3
    assert sink.files[0].action == "add"
    assert sink.files[0].modification_time_ms == 1_700_000_000_000


def test_a_sink_log_with_a_missing_batch_file_is_corrupt(tmp_path: Path) -> None:
    log = tmp_path / "out" / "_spark_metadata"
    write(log / "2.compact", "v1\n" + sink_line("file:///out/a"))
    write(log / "3", "v1\n" + sink_line("file:///out/b"))
    write(log / "5", "v1\n" + sink_line("file:///out/c"))
    with pytest.raises(CorruptCheckpointError, match="has batches 3 and 5 but not 4"):
        read_sink_log(str(tmp_path / "out"))


def test_a_damaged_sink_log_line_is_named(tmp_path: Path) -> None:
    log = tmp_path / "out" / "_spark_metadata"
    write(log / "0", "v1\n" + sink_line("file:///out/a").replace('"add"', '"move"'))
    with pytest.raises(CorruptCheckpointError, match="_spark_metadata/0 line 2: action must be"):
        read_sink_log(str(tmp_path / "out"))
    write(log / "0", "v1\n" + sink_line("file:///out/a")[:40])
    with pytest.raises(CorruptCheckpointError, match="_spark_metadata/0 line 2 is not valid JSON"):
        read_sink_log(str(tmp_path / "out"))
    write(log / "0", "v2\n" + sink_line("file:///out/a"))
    with pytest.raises(UnsupportedLogVersionError, match="_spark_metadata/0 is in log format v2"):
        read_sink_log(str(tmp_path / "out"))


def test_a_sink_without_a_log_has_committed_nothing(tmp_path: Path) -> None:
    write(tmp_path / "out" / "part-0.parquet", "uncommitted")
    sink = read_sink_log(str(tmp_path / "out"))
    assert (sink.batch_ids, sink.files, sink.compact_batch_id) == ((), (), None)
    assert sink.last_batch_id is None
