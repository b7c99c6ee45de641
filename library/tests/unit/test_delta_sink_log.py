"""What the Delta sink says a generation committed, from a table written with delta-rs (no
Spark, so the log's cases are quick to make), and how `output show` words it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

import support.json_samples as json_samples
from pyspark_kafka_upgrade._adapters.sink.delta_sink import (
    DeltaSink,
)
from pyspark_kafka_upgrade._application.output_show import (
    GenerationSummary,
    render_output,
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
