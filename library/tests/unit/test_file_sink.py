"""The file sink, on generations written by real streaming queries, with debris beside them.

Each generation is a file-source query (rows already shaped like the windowed aggregates)
writing in append mode through the sink with its own checkpoint, as the pipeline does
(``support.sinks``). A part file copied into an output directory afterwards stands for a
batch that wrote and never committed. What every sink promises is in
``tests/contract/test_sink_contract.py``; this is what the file sink does besides.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._adapters.sink.file_sink import (
    FileSink,
)
from pyspark_kafka_upgrade._adapters.sink.reading import (
    read_output,
)
from pyspark_kafka_upgrade._domain.records.damage import (
    Damage,
    DamagedFile,
    FileReadFailure,
    Part,
)
from pyspark_kafka_upgrade._domain.records.sink import (
    GenerationOutput,
)
from pyspark_kafka_upgrade._domain.records.sink_errors import (
    IncompatibleGenerationsError,
    NoOutputError,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from support.sinks import (
    V1,
    V2,
    article_ids,
    plant_uncommitted_file,
    table,
    window,
    write_generation,
)

COMMITTED_ROWS = [
    ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "a", "3", None),
    ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "b", "1", None),
    ("1", "2025-11-22 10:10:00", "2025-11-22 10:20:00", "a", "2", None),
    ("2", "2025-11-22 10:20:00", "2025-11-22 10:30:00", "a", "5", "4"),
    ("2", "2025-11-22 10:20:00", "2025-11-22 10:30:00", "c", "1", "1"),
]


def file_sink(root: Path) -> FileSink:
    return FileSink(str(root), "parquet")


# --- finding generations ---------------------------------------------------------------------


def test_generations_present_are_only_generation_directories(tmp_path: Path) -> None:
    output = tmp_path / "output"
    for name in ("generation-12", "generation-1", "generation-0", "generation-x", "_tmp"):
        (output / name).mkdir(parents=True)
    (output / "generation-4").write_text("a file, not a generation", encoding="utf-8")

    assert file_sink(tmp_path).generations() == [1, 12]


def test_no_generation_is_present_before_the_first_run(tmp_path: Path) -> None:
    assert file_sink(tmp_path / "never-ran").generations() == []


def test_each_generation_says_what_its_log_committed(parquet_root: Path) -> None:
    outputs = file_sink(parquet_root).outputs()

    assert [(o.generation, o.last_batch_id, o.live_files, o.has_output) for o in outputs] == [
        (1, 1, 2, True),
        (2, 0, 1, True),
        (3, None, 0, False),
    ]
    assert outputs[0].location == str(parquet_root / "output" / "generation-1")


def test_committed_files_are_the_part_files_other_than_the_uncommitted_one(
    parquet_root: Path,
) -> None:
    directory = parquet_root / "output" / "generation-2"
    on_disk = sorted(path.name for path in directory.glob("part-*"))

    committed = [path.rsplit("/", 1)[1] for path in file_sink(parquet_root).output(2).files]

    assert len(on_disk) == 2
    assert committed == [name for name in on_disk if "uncommitted" not in name]
    assert file_sink(parquet_root).output(3).files == ()


def test_the_quarantine_and_a_directory_given_elsewhere_are_located(tmp_path: Path) -> None:
    root = str(tmp_path)
    layout = GenerationLayout(root, 2)

    assert FileSink(root, "orc", quarantine=True).location(2) == layout.quarantine
    assert FileSink(root, "orc", located={2: "/else/where"}).location(2) == "/else/where"
    assert FileSink(root, "orc", located={2: "/else/where"}).location(3) == (
        GenerationLayout(root, 3).output
    )


# --- reading -------------------------------------------------------------------------------


def test_reads_the_committed_rows_of_every_generation_and_no_uncommitted_file(
    spark: SparkSession, parquet_root: Path
) -> None:
    frame = read_output(spark, str(parquet_root), file_format="parquet")

    # Generation 1 predates the users metric: null there, not a reason to fail.
    assert frame.dtypes == [
        ("generation", "int"),
        ("window_start", "timestamp"),
        ("window_end", "timestamp"),
        ("article_id", "string"),
        ("views", "bigint"),
        ("users", "bigint"),
    ]
    assert table(frame) == COMMITTED_ROWS


def test_reads_only_the_generations_asked_for(spark: SparkSession, parquet_root: Path) -> None:
    frame = read_output(spark, str(parquet_root), file_format="parquet", generations=[1])

    assert frame.columns == ["generation", "window_start", "window_end", "article_id", "views"]
    assert table(frame) == [row[:5] for row in COMMITTED_ROWS if row[0] == "1"]


def test_spark_honours_the_log_only_when_reading_one_generation_directory_alone(
    spark: SparkSession, parquet_root: Path
) -> None:
    # Why read_output reads generation by generation (Spark 4.3, measured here).
    output = parquet_root / "output"
    alone = spark.read.parquet(str(output / "generation-2"))
    globbed = spark.read.parquet(str(output / "generation-*"))
    several = spark.read.parquet(str(output / "generation-1"), str(output / "generation-2"))
    recursive = spark.read.option("recursiveFileLookup", "true").parquet(str(output))

    assert article_ids(alone) == ["a", "c"]
    assert article_ids(globbed) == ["a", "a", "a", "b", "c", "stray-2", "stray-3"]
    assert article_ids(several) == ["a", "a", "a", "b", "c", "stray-2"]
    assert article_ids(recursive) == ["a", "a", "a", "b", "c", "stray-2", "stray-3"]
    # generation-<n> is not a key=value partition directory, so the parent on its own is
    # searched for files directly inside it: there are none.
    with pytest.raises(AnalysisException, match="UNABLE_TO_INFER_SCHEMA"):
        spark.read.parquet(str(output))


def test_orc_generations_are_read_the_same_way(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "pipeline"
    write_generation(spark, root, 1, [[window(0, "a", 3)]], schema=V1, file_format="orc")
    write_generation(spark, root, 2, [[window(10, "a", 1, users=1)]], schema=V2, file_format="orc")
    plant_uncommitted_file(
        spark,
        Path(GenerationLayout(str(root), 2).output),
        [window(60, "stray-2", 99, users=99)],
        schema=V2,
        file_format="orc",
    )

    frame = read_output(spark, str(root), file_format="orc")

    assert frame.columns == [
        "generation",
        "window_start",
        "window_end",
        "article_id",
        "views",
        "users",
    ]
    assert table(frame) == [
        ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "a", "3", None),
        ("2", "2025-11-22 10:10:00", "2025-11-22 10:20:00", "a", "1", "1"),
    ]


def test_each_generation_is_read_in_the_format_its_files_were_written_in(
    spark: SparkSession, tmp_path: Path
) -> None:
    # An upgrade may move the sink from parquet to orc; the old generation stays parquet.
    root = tmp_path / "pipeline"
    write_generation(spark, root, 1, [[window(0, "a", 3)]], schema=V1, file_format="parquet")
    write_generation(spark, root, 2, [[window(10, "a", 1, users=1)]], schema=V2, file_format="orc")

    frame = read_output(spark, str(root), file_format="orc")

    assert table(frame) == [
        ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "a", "3", None),
        ("2", "2025-11-22 10:10:00", "2025-11-22 10:20:00", "a", "1", "1"),
    ]


def test_a_column_whose_type_changed_between_generations_is_named(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = tmp_path / "pipeline"
    write_generation(spark, root, 1, [[window(0, "a", 3)]], schema=V1, file_format="parquet")
    changed = V1.replace("views BIGINT", "views ARRAY<STRING>")
    write_generation(
        spark,
        root,
        2,
        [[{**window(10, "a", 0), "views": ["x"]}]],
        schema=changed,
        file_format="parquet",
    )

    with pytest.raises(IncompatibleGenerationsError) as raised:
        read_output(spark, str(root), file_format="parquet")

    assert str(raised.value) == (
        "the generations' output cannot be read as one table: views is bigint in "
        "generation(s) 1 and array<string> in generation(s) 2"
    )


def test_an_output_column_named_generation_is_refused_not_overwritten(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = tmp_path / "pipeline"
    row = {**window(0, "a", 3), "Generation": "blue"}
    write_generation(
        spark, root, 1, [[row]], schema=V1 + ", Generation STRING", file_format="parquet"
    )

    with pytest.raises(IncompatibleGenerationsError) as raised:
        read_output(spark, str(root), file_format="parquet")

    assert str(raised.value) == (
        f"{root}/output/generation-1 already has a column named 'generation', the column "
        "that says which generation a row comes from; rename it in the aggregation"
    )


# --- nothing to read -------------------------------------------------------------------------


def test_no_generation_at_all_names_the_directory_looked_in(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "output" / "notes").mkdir(parents=True)

    with pytest.raises(NoOutputError) as raised:
        read_output(spark, str(tmp_path), file_format="parquet")

    assert str(raised.value) == (
        f"no output under {tmp_path / 'output'}: it holds no generation-<n> directory; "
        "has the pipeline run with this pipeline.root?"
    )


def test_a_generation_asked_for_that_has_no_directory(
    spark: SparkSession, parquet_root: Path
) -> None:
    with pytest.raises(NoOutputError) as raised:
        read_output(spark, str(parquet_root), file_format="parquet", generations=[1, 7])

    assert str(raised.value) == (
        f"no output directory for generation 7: {parquet_root}/output/generation-7 does not "
        "exist; generations with output: 1, 2, 3"
    )


def test_generations_that_committed_nothing_yet_cannot_be_read(
    spark: SparkSession, parquet_root: Path
) -> None:
    with pytest.raises(NoOutputError) as raised:
        read_output(spark, str(parquet_root), file_format="parquet", generations=[3])

    assert str(raised.value) == f"no committed batch yet in {parquet_root}/output/generation-3"


# --- a file Spark cannot read ----------------------------------------------------------------


def test_damage_in_maps_a_missing_or_refused_file_to_its_generation() -> None:
    outputs = [
        GenerationOutput(1, "/o/generation-1", (0,), files=("file:///o/generation-1/a",)),
        GenerationOutput(
            2,
            "/o/generation-2",
            (1,),
            files=("file:///o/generation-2/b", "file:///o/generation-2/c"),
        ),
    ]
    gone = FileReadFailure(
        "file:/o/generation-2/c", "FAILED_READ_FILE.FILE_NOT_EXIST", "", True, False
    )
    refused = FileReadFailure("/o/generation-1/a", "FAILED_READ_FILE.NO_HINT", "", False, True)
    sink = file_sink(Path("/o"))

    assert sink.damage_in(gone, outputs) == DamagedFile(
        2, Part.COMMITTED_FILE, "file:///o/generation-2/c", Damage.MISSING, "is missing"
    )
    assert sink.damage_in(refused, outputs) == DamagedFile(
        1,
        Part.COMMITTED_FILE,
        "file:///o/generation-1/a",
        Damage.NO_ACCESS,
        "cannot be read (permission denied)",
    )
    assert sink.damage_in(None, outputs) is None
