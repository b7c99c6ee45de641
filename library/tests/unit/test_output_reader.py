"""The output reader, on generations written by real streaming queries, with debris beside them.

Each generation is a file-source query (rows already shaped like the windowed aggregates)
writing in append mode with its own checkpoint, as the pipeline does. A part file copied
into an output directory afterwards stands for a batch that wrote and never committed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_kafka_upgrade._adapters.sink.integrity import IntegrityError
from pyspark_kafka_upgrade._adapters.sink.reader import (
    GenerationOutput,
    IncompatibleGenerationsError,
    NoOutputError,
    committed_files,
    damage_in,
    describe_generations,
    generations_present,
    read_around_damage,
    read_output,
)
from pyspark_kafka_upgrade._application.output_show import (
    InvalidLimitError,
    show_output,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.damage import Damage, DamagedFile, FileReadFailure, Part
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT

QUERY_TIMEOUT_S = 60
V1 = "window_start TIMESTAMP, window_end TIMESTAMP, article_id STRING, views BIGINT"
# Version 2 of the pipeline added a metric.
V2 = V1 + ", users BIGINT"
START = datetime(2025, 11, 22, 10, 0, tzinfo=UTC)
Row = dict[str, Any]


def window(minute: int, article: str, views: int, **more: int) -> Row:
    start = START + timedelta(minutes=minute)
    return {
        "window_start": start,
        "window_end": start + timedelta(minutes=10),
        "article_id": article,
        "views": views,
        **more,
    }


def as_json_line(row: Row) -> str:
    return json.dumps(
        {
            name: value.isoformat().replace("+00:00", "Z") if isinstance(value, datetime) else value
            for name, value in row.items()
        }
    )


def write_generation(
    spark: SparkSession,
    root: Path,
    generation: int,
    batches: Sequence[Sequence[Row]],
    *,
    schema: str,
    file_format: str,
) -> None:
    """Run one generation's query over ``batches``, one micro-batch each, until done."""
    source = root.parent / f"source-{root.name}-{generation}"
    source.mkdir(parents=True)
    for number, batch in enumerate(batches):
        lines = "".join(as_json_line(row) + "\n" for row in batch)
        (source / f"batch-{number}.json").write_text(lines, encoding="utf-8")
    layout = GenerationLayout(str(root), generation)
    query = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .writeStream.format(file_format)
        .outputMode("append")
        .option("path", layout.output)
        .option("checkpointLocation", layout.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        finished = query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()
    assert finished, f"generation {generation} did not finish in {QUERY_TIMEOUT_S}s"
    assert query.exception() is None


def plant_uncommitted_file(
    spark: SparkSession,
    directory: Path,
    rows: Sequence[Row],
    *,
    schema: str,
    file_format: str,
) -> None:
    """Put a part file no ``_spark_metadata`` names into ``directory``, as a failed batch would."""
    scratch = directory.parent.parent.parent / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    frame = spark.createDataFrame([tuple(row.values()) for row in rows], schema)
    frame.coalesce(1).write.format(file_format).save(str(scratch))
    (part,) = scratch.glob("part-*")
    directory.mkdir(parents=True, exist_ok=True)
    shutil.move(part, directory / f"part-00000-00000000-uncommitted-c000.{file_format}")
    shutil.rmtree(scratch)


def table(frame: DataFrame) -> list[tuple[str | None, ...]]:
    """Rows as text (the session's time zone is UTC), in a stable order."""
    text = frame.select(*(F.col(name).cast("string") for name in frame.columns))
    return sorted((tuple(row) for row in text.collect()), key=repr)


def article_ids(frame: DataFrame) -> list[str]:
    return sorted(row.article_id for row in frame.select("article_id").collect())


@pytest.fixture(scope="module")
def parquet_root(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generation 1 (two batches), 2 (version 2, one batch, plus an uncommitted file), and
    3, whose query never committed: a directory with an uncommitted file and no log."""
    root = tmp_path_factory.mktemp("parquet") / "pipeline"
    write_generation(
        spark,
        root,
        1,
        [[window(0, "a", 3), window(0, "b", 1)], [window(10, "a", 2)]],
        schema=V1,
        file_format="parquet",
    )
    write_generation(
        spark,
        root,
        2,
        [[window(20, "c", 1, users=1), window(20, "a", 5, users=4)]],
        schema=V2,
        file_format="parquet",
    )
    for generation in (2, 3):
        plant_uncommitted_file(
            spark,
            Path(GenerationLayout(str(root), generation).output),
            [window(60, f"stray-{generation}", 99, users=99)],
            schema=V2,
            file_format="parquet",
        )
    return root


COMMITTED_ROWS = [
    ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "a", "3", None),
    ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "b", "1", None),
    ("1", "2025-11-22 10:10:00", "2025-11-22 10:20:00", "a", "2", None),
    ("2", "2025-11-22 10:20:00", "2025-11-22 10:30:00", "a", "5", "4"),
    ("2", "2025-11-22 10:20:00", "2025-11-22 10:30:00", "c", "1", "1"),
]


# --- finding generations ---------------------------------------------------------------------


def test_generations_present_lists_only_generation_directories(tmp_path: Path) -> None:
    output = tmp_path / "output"
    for name in ("generation-12", "generation-1", "generation-0", "generation-x", "_tmp"):
        (output / name).mkdir(parents=True)
    (output / "generation-4").write_text("a file, not a generation", encoding="utf-8")

    assert generations_present(str(tmp_path)) == [1, 12]


def test_generations_present_is_empty_before_the_first_run(tmp_path: Path) -> None:
    assert generations_present(str(tmp_path / "never-ran")) == []


def test_each_generation_says_what_its_log_committed(parquet_root: Path) -> None:
    outputs = describe_generations(str(parquet_root))

    assert [(o.generation, o.last_batch_id, o.live_files, o.has_output) for o in outputs] == [
        (1, 1, 2, True),
        (2, 0, 1, True),
        (3, None, 0, False),
    ]
    assert outputs[0].directory == str(parquet_root / "output" / "generation-1")


def test_committed_files_are_the_part_files_other_than_the_uncommitted_one(
    parquet_root: Path,
) -> None:
    directory = parquet_root / "output" / "generation-2"
    on_disk = sorted(path.name for path in directory.glob("part-*"))

    committed = [entry.path.rsplit("/", 1)[1] for entry in committed_files(str(parquet_root), 2)]

    assert len(on_disk) == 2
    assert committed == [name for name in on_disk if "uncommitted" not in name]
    assert committed_files(str(parquet_root), 3) == ()


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


# --- output show ---------------------------------------------------------------------------


def settings_for(root: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    # ./pipeline.toml is read when present; look where there is none.
    monkeypatch.chdir(root.parent)
    overrides = [f"pipeline.root={root}", "sink.format=parquet"]
    return load_settings(PROJECT, env={}, overrides=overrides).settings


def test_show_output_prints_a_summary_and_the_rows_in_window_order(
    spark: SparkSession, parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = show_output(
        settings_for(parquet_root, monkeypatch), spark=spark, limit=None, as_json=False
    )

    assert text == "\n".join(
        [
            f"output        {parquet_root}/output (parquet)",
            "generation 1  3 rows (last batch 1)",
            "generation 2  2 rows (last batch 0)",
            "generation 3  nothing committed yet",
            "rows shown    5 of 5, by window_start, generation, article_id",
            "",
            "generation  window_start          window_end            article_id  views  users",
            "         1  2025-11-22T10:00:00Z  2025-11-22T10:10:00Z  a               3   null",
            "         1  2025-11-22T10:00:00Z  2025-11-22T10:10:00Z  b               1   null",
            "         1  2025-11-22T10:10:00Z  2025-11-22T10:20:00Z  a               2   null",
            "         2  2025-11-22T10:20:00Z  2025-11-22T10:30:00Z  a               5      4",
            "         2  2025-11-22T10:20:00Z  2025-11-22T10:30:00Z  c               1      1",
        ]
    )


def test_show_output_of_one_generation_with_a_limit_takes_a_session_factory(
    spark: SparkSession, parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def factory() -> SparkSession:
        calls.append("called")
        return spark

    session: Callable[[], SparkSession] = factory
    text = show_output(
        settings_for(parquet_root, monkeypatch),
        spark=session,
        limit=1,
        as_json=False,
        generation=2,
    )

    assert calls == ["called"]
    assert text == "\n".join(
        [
            f"output        {parquet_root}/output (parquet)",
            "generation 2  2 rows (last batch 0)",
            "rows shown    1 of 2, by window_start, generation, article_id",
            "",
            "generation  window_start          window_end            article_id  views  users",
            "         2  2025-11-22T10:20:00Z  2025-11-22T10:30:00Z  a               5      4",
        ]
    )


def test_show_output_as_json_has_stable_keys(
    spark: SparkSession, parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = show_output(settings_for(parquet_root, monkeypatch), spark=spark, limit=2, as_json=True)

    output = f"{parquet_root}/output"
    row = {
        "generation": 1,
        "window_start": "2025-11-22T10:00:00Z",
        "window_end": "2025-11-22T10:10:00Z",
    }
    expected = {
        "output": output,
        "format": "parquet",
        "generations": [
            {"generation": 1, "directory": f"{output}/generation-1", "last_batch_id": 1, "rows": 3},
            {"generation": 2, "directory": f"{output}/generation-2", "last_batch_id": 0, "rows": 2},
            {
                "generation": 3,
                "directory": f"{output}/generation-3",
                "last_batch_id": None,
                "rows": 0,
            },
        ],
        "total_rows": 5,
        "order_by": ["window_start", "generation", "article_id"],
        "columns": ["generation", "window_start", "window_end", "article_id", "views", "users"],
        "rows": [
            {**row, "article_id": "a", "views": 3, "users": None},
            {**row, "article_id": "b", "views": 1, "users": None},
        ],
    }
    assert text == json.dumps(expected, indent=2)


def test_show_output_refuses_a_negative_limit(
    spark: SparkSession, parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(InvalidLimitError, match="must be 0 or more, got -1"):
        show_output(settings_for(parquet_root, monkeypatch), spark=spark, limit=-1, as_json=False)


def test_show_output_with_nothing_committed_does_not_start_spark(
    parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_spark() -> SparkSession:
        raise AssertionError("Spark was started")

    with pytest.raises(NoOutputError) as raised:
        show_output(settings_for(parquet_root, monkeypatch), spark=no_spark, limit=5, generation=3)

    assert str(raised.value) == f"no committed batch yet in {parquet_root}/output/generation-3"


# --- damaged committed files -----------------------------------------------------------------
# Spark's own errors on real damage are in tests/integration/test_verify.py; here the retry
# around them, with an attempt that fails as Spark would.


def two_generations() -> list[GenerationOutput]:
    return [
        GenerationOutput(
            1, "/o/generation-1", 0, 1, "parquet", files=("file:///o/generation-1/a",)
        ),
        GenerationOutput(
            2,
            "/o/generation-2",
            1,
            2,
            "parquet",
            files=("file:///o/generation-2/b", "file:///o/generation-2/c"),
        ),
    ]


def unreadable(path: str) -> FileReadFailure:
    return FileReadFailure(path, "FAILED_READ_FILE.NO_HINT", "BadThing: no", False, False)


class SparkFailed(Exception):
    """Stands for a Py4JJavaError naming the file it could not read."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def spark_says(error: BaseException) -> FileReadFailure | None:
    return unreadable(error.path) if isinstance(error, SparkFailed) else None


def test_a_file_spark_cannot_read_is_left_out_and_the_attempt_runs_again() -> None:
    seen: list[list[tuple[str, ...]]] = []

    def attempt(outputs: list[GenerationOutput]) -> str:
        seen.append([output.files for output in outputs])
        # Spark names it file:/..., the log file:///...: the same file.
        if "file:///o/generation-2/b" in outputs[1].files:
            raise SparkFailed("file:/o/generation-2/b")
        return "report"

    assert read_around_damage(two_generations(), attempt, failed_file=spark_says) == "report"
    assert seen == [
        [("file:///o/generation-1/a",), ("file:///o/generation-2/b", "file:///o/generation-2/c")],
        [("file:///o/generation-1/a",), ("file:///o/generation-2/c",)],
    ]


def test_the_attempt_that_succeeds_sees_the_damage_on_its_generation() -> None:
    def attempt(outputs: list[GenerationOutput]) -> list[tuple[int, str, Damage]]:
        if outputs[0].files:
            raise SparkFailed("/o/generation-1/a")
        return [(o.generation, f.detail, f.damage) for o in outputs for f in o.damaged]

    found = read_around_damage(two_generations(), attempt, failed_file=spark_says)

    assert found == [
        (1, "cannot be read by Spark (FAILED_READ_FILE.NO_HINT: BadThing: no)", Damage.UNREADABLE)
    ]


def test_an_error_about_anything_else_is_raised_as_it_is() -> None:
    def attempt(outputs: list[GenerationOutput]) -> None:
        raise SparkFailed("file:///somewhere/else")

    with pytest.raises(SparkFailed):
        read_around_damage(two_generations(), attempt, failed_file=spark_says)


def test_past_the_limit_of_unreadable_files_it_stops_in_one_line() -> None:
    def attempt(outputs: list[GenerationOutput]) -> None:
        first = next(path for output in outputs for path in output.files)
        raise SparkFailed(first)

    with pytest.raises(IntegrityError) as raised:
        read_around_damage(two_generations(), attempt, failed_file=spark_says, limit=1)

    assert str(raised.value) == (
        "generation 1's committed file a cannot be read by Spark (FAILED_READ_FILE.NO_HINT: "
        "BadThing: no): the output was changed outside the pipeline, or the storage damaged "
        "it; restore it from a backup, or check the storage itself: it may be failing (1 more "
        "damaged in generation 2: `verify --json` lists each)"
    )


def test_damage_in_maps_a_missing_or_refused_file_to_its_generation() -> None:
    outputs = two_generations()
    gone = FileReadFailure(
        "file:/o/generation-2/c", "FAILED_READ_FILE.FILE_NOT_EXIST", "", True, False
    )
    refused = FileReadFailure("/o/generation-1/a", "FAILED_READ_FILE.NO_HINT", "", False, True)

    assert damage_in(gone, outputs) == DamagedFile(
        2, Part.COMMITTED_FILE, "file:///o/generation-2/c", Damage.MISSING, "is missing"
    )
    assert damage_in(refused, outputs) == DamagedFile(
        1,
        Part.COMMITTED_FILE,
        "file:///o/generation-1/a",
        Damage.NO_ACCESS,
        "cannot be read (permission denied)",
    )
    assert damage_in(None, outputs) is None
