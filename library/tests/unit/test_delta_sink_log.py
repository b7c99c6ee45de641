"""What the Delta sink says a generation committed, and which backfills the table holds, from
a table written with delta-rs (no Spark, so the log's cases are quick to make), and how
`output show` words it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, Transaction, write_deltalake

import support.json_samples as json_samples
from pyspark_kafka_upgrade._adapters.sink.delta_log import (
    BACKFILL_APP_ID,
)
from pyspark_kafka_upgrade._adapters.sink.delta_sink import (
    DeltaSink,
)
from pyspark_kafka_upgrade._application.output_show import (
    GenerationSummary,
    render_output,
)
from pyspark_kafka_upgrade._domain.records.backfill import (
    BackfillRecordError,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    table_location,
)


def test_rows_another_writer_appended_under_a_generation_are_its_output(tmp_path: Path) -> None:
    # Delta's own streaming sink, or a backfill, appends under generation 2 without the
    # pipeline's batch marks: every reader of the table sees the rows, so `verify` and
    # `output show` must read them too, not leave them out as never committed.
    rows = pa.table(
        {
            "generation": pa.array([2, 2], pa.int32()),
            "article_id": ["a1", "a2"],
            "views": pa.array([3, 1], pa.int64()),
        }
    )
    write_deltalake(table_location(str(tmp_path)), rows, partition_by=["generation"])

    sink = DeltaSink(str(tmp_path))
    (output,) = sink.outputs()

    assert sink.generations() == [2]
    assert (output.generation, output.batch_ids, output.last_batch_id) == (2, (), None)
    assert output.live_files == len(output.files) == 1
    assert output.has_output


def test_output_show_counts_them_without_a_batch_of_the_pipeline_s() -> None:
    report = dataclasses.replace(
        json_samples.output_report(),
        generations=(
            GenerationSummary(1, "file:///data/output/table", 4, 3),
            GenerationSummary(2, "file:///data/output/table", None, 2),
            GenerationSummary(3, "file:///data/output/table", None, 0),
        ),
    )

    lines = render_output(report, as_json=False).splitlines()

    assert lines[1:4] == [
        "generation 1  3 rows (last batch 4)",
        "generation 2  2 rows (no batch of the pipeline's)",
        "generation 3  nothing committed yet",
    ]


# -- backfills ---------------------------------------------------------------------------------

BACKFILL = {
    "format_version": 1,
    "backfill": 1,
    "pipeline": "page-views",
    "generation": 2,
    "window": {"duration_ms": 600_000, "slide_ms": 600_000, "watermark_delay_ms": 300_000},
    "grouping_keys": ["article_id"],
    "aggregates": [{"name": "views", "expression": "count(*)"}],
    "ranges": [{"after_ms": 1_763_805_600_000, "through_ms": 1_763_806_800_000}],
    "files": [],
    "windows": 2,
    "rows": 2,
    "created_at_ms": 1_795_341_600_000,
}


def commit_rows(
    tmp_path: Path, *, user_metadata: str | None = None, backfill: int | None = None
) -> None:
    """Rows of generation 1 committed as a backfill would: its record in ``userMetadata``,
    its number as the transaction of the backfills (each optional)."""
    rows = pa.table({"generation": pa.array([1], pa.int32()), "views": pa.array([3], pa.int64())})
    write_deltalake(
        table_location(str(tmp_path)),
        rows,
        partition_by=["generation"],
        mode="append",
        commit_properties=CommitProperties(
            custom_metadata=None if user_metadata is None else {"userMetadata": user_metadata},
            app_transactions=None if backfill is None else [Transaction(BACKFILL_APP_ID, backfill)],
        ),
    )


def test_a_backfill_commit_is_read_from_the_tables_log_and_the_next_number_follows_it(
    tmp_path: Path,
) -> None:
    commit_rows(tmp_path, user_metadata='{"generation": 1, "batch": 0}')
    sink = DeltaSink(str(tmp_path))
    assert (sink.backfills(), sink.next_backfill()) == ([], 1)

    commit_rows(tmp_path, user_metadata=json.dumps(BACKFILL), backfill=1)

    (commit,) = sink.backfills()
    assert commit.to_json() == BACKFILL
    assert sink.next_backfill() == 2
    assert sink.committed_batches(1) == (0,)  # a backfill is no batch of its generation


def test_the_next_number_follows_a_backfill_the_log_no_longer_names(tmp_path: Path) -> None:
    # Delta drops commit files past delta.logRetentionDuration; the transaction's version
    # stays in every snapshot, and Delta would skip a write under a number it holds.
    commit_rows(tmp_path, backfill=3)

    sink = DeltaSink(str(tmp_path))

    assert (sink.backfills(), sink.next_backfill()) == ([], 4)


def test_a_backfill_record_that_does_not_read_is_named_not_skipped(tmp_path: Path) -> None:
    commit_rows(tmp_path, user_metadata=json.dumps({**BACKFILL, "ranges": "all"}), backfill=1)

    with pytest.raises(BackfillRecordError, match="ranges"):
        DeltaSink(str(tmp_path)).backfills()
