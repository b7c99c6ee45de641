"""The contract every sink keeps, run against each sink this project has (each format of each
kind in ``values.catalog.SINKS``): what a generation committed, its rows read back exactly,
generations apart, damage reported rather than read, where each generation's output is, and
a backfill's rows read instead of the ones it replaces.

Generations are written through ``Sink.start`` by file-source queries over rows already
shaped like the windowed aggregates (``support.sinks``): no Kafka. A damaged committed file
is one the test changes after its batch committed, as storage or a person would.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

# Import layout that holds whatever the package is named: a straight import sorts before
# the package's from-imports, and trailing commas keep those exploded at any name length.
import support.sinks as sinks
from pyspark_kafka_upgrade._adapters.sink.reading import (
    read_around_damage,
)
from pyspark_kafka_upgrade._adapters.spark.spark_errors import (
    failed_file,
)
from pyspark_kafka_upgrade._domain.records.backfill import (
    BackfillCommit,
    EndRange,
)
from pyspark_kafka_upgrade._domain.records.damage import (
    Damage,
    Part,
)
from pyspark_kafka_upgrade._domain.records.signature import (
    Aggregate,
)
from pyspark_kafka_upgrade._domain.records.sink import (
    GENERATION,
    GenerationOutput,
    Sink,
)
from pyspark_kafka_upgrade._domain.records.sink_errors import (
    NoOutputError,
)
from pyspark_kafka_upgrade._domain.values.catalog import (
    SINKS,
    SinkFormat,
)
from pyspark_kafka_upgrade._domain.values.validation import (
    WindowSpec,
)

window = sinks.window
# Generation 1: two batches of version 1; generation 2: one batch of version 2 (a metric
# added), so reading both back must fill the new column with nulls for generation 1.
FIRST = [[window(0, "a", 3), window(0, "b", 1)], [window(10, "a", 2)]]
SECOND = [[window(20, "c", 1, users=1), window(20, "a", 5, users=4)]]
FIRST_ROWS = [
    ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "a", "3"),
    ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "b", "1"),
    ("1", "2025-11-22 10:10:00", "2025-11-22 10:20:00", "a", "2"),
]
SECOND_ROWS = [
    ("2", "2025-11-22 10:20:00", "2025-11-22 10:30:00", "a", "5", "4"),
    ("2", "2025-11-22 10:20:00", "2025-11-22 10:30:00", "c", "1", "1"),
]


@dataclasses.dataclass(frozen=True)
class Written:
    """A pipeline root whose sink holds generations 1 and 2 (read only)."""

    root: Path
    sink_format: SinkFormat

    @property
    def sink(self) -> Sink:
        return sinks.sink_of(self.root, self.sink_format)


@pytest.fixture(params=sinks.SINK_FORMATS)
def sink_format(request: pytest.FixtureRequest) -> SinkFormat:
    chosen: SinkFormat = request.param
    return chosen


@pytest.fixture(scope="module", params=sinks.SINK_FORMATS)
def written(
    request: pytest.FixtureRequest, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Written:
    chosen: SinkFormat = request.param
    root = tmp_path_factory.mktemp(f"sink-{chosen}") / "pipeline"
    both_generations(spark, root, chosen)
    return Written(root, chosen)


def text_rows(frame: DataFrame) -> list[tuple[str | None, ...]]:
    return sinks.table(frame)


# --- nothing written yet --------------------------------------------------------------------


def test_a_generation_that_never_ran_has_committed_nothing(
    sink_format: SinkFormat, tmp_path: Path, spark: SparkSession
) -> None:
    sink = sinks.sink_of(tmp_path / "pipeline", sink_format)

    output = sink.output(1)

    assert sink.generations() == []
    assert sink.committed_batches(1) == ()
    assert (output.generation, output.location) == (1, sink.location(1))
    assert (output.batch_ids, output.last_batch_id, output.live_files) == ((), None, 0)
    assert (output.files, output.damaged, output.has_output) == ((), (), False)
    with pytest.raises(NoOutputError):
        sink.outputs()
    with pytest.raises(NoOutputError):
        sink.outputs([1])
    with pytest.raises(NoOutputError, match="no committed batch yet"):
        sink.read(spark, [output])


# --- what a generation committed, read back ---------------------------------------------------


def test_committed_batches_and_files_are_reported(written: Written) -> None:
    sink = written.sink
    output = sink.output(1)

    assert sink.committed_batches(1) == (0, 1)
    assert sink.committed_batches(2) == (0,)
    assert (output.batch_ids, output.last_batch_id, output.has_output) == ((0, 1), 1, True)
    assert output.live_files == len(output.files) > 0
    assert output.damaged == ()
    assert output.file_format == written.sink_format


def test_committed_rows_are_read_back_exactly_with_their_generation(
    written: Written, spark: SparkSession
) -> None:
    sink = written.sink

    frame = sink.read(spark, sink.outputs([1]))

    assert frame.columns == [GENERATION, "window_start", "window_end", "article_id", "views"]
    assert dict(frame.dtypes)[GENERATION] == "int"
    assert text_rows(frame) == FIRST_ROWS


def test_two_generations_are_read_back_separately_and_together(
    written: Written, spark: SparkSession
) -> None:
    sink = written.sink

    second = sink.read(spark, sink.outputs([2]))
    both = sink.read(spark, sink.outputs())

    assert sink.generations() == [1, 2]
    assert [output.generation for output in sink.outputs()] == [1, 2]
    assert text_rows(second) == SECOND_ROWS
    # A column a generation lacks (a metric added later) is null in its rows.
    assert both.columns == [*second.columns]
    assert text_rows(both) == [(*row, None) for row in FIRST_ROWS] + SECOND_ROWS


def test_a_generation_asked_for_that_has_no_output_is_refused(written: Written) -> None:
    with pytest.raises(NoOutputError, match="generation 7"):
        written.sink.outputs([1, 7])


def test_each_generation_has_a_location_that_holds_its_committed_files(
    written: Written,
) -> None:
    sink = written.sink

    for generation in (1, 2):
        location = sink.location(generation)
        assert location == sink.location(generation) == sink.output(generation).location
        assert location.startswith(str(written.root))
        here = sinks.local_path(location)
        for path in sink.output(generation).files:
            assert sinks.local_path(path).is_relative_to(here), (path, location)


def test_a_restarted_query_goes_on_from_its_checkpoint_writing_no_batch_twice(
    sink_format: SinkFormat, tmp_path: Path, spark: SparkSession
) -> None:
    root = tmp_path / "pipeline"
    sinks.write_generation(spark, root, 1, FIRST[:1], schema=sinks.V1, file_format=sink_format)
    sinks.write_generation(spark, root, 1, FIRST[1:], schema=sinks.V1, file_format=sink_format)
    sink = sinks.sink_of(root, sink_format)

    assert sink.committed_batches(1) == (0, 1)
    assert text_rows(sink.read(spark, sink.outputs())) == FIRST_ROWS


# --- damage -----------------------------------------------------------------------------------


def damaged_generation(
    spark: SparkSession, root: Path, sink_format: SinkFormat
) -> tuple[Sink, Path, list[tuple[str | None, ...]]]:
    """Generation 1 written; one of its committed files with rows, and the rows the others
    hold (what a reader still gets once that file is left out)."""
    sinks.write_generation(spark, root, 1, FIRST, schema=sinks.V1, file_format=sink_format)
    sink = sinks.sink_of(root, sink_format)
    files = [sinks.local_path(path) for path in sink.output(1).files]
    # A table's files are parquet files; the generation is their directory's, not a column.
    data_format = sinks.data_file_format(sink_format)
    chosen = next(path for path in files if spark.read.format(data_format).load(str(path)).count())
    # Only its columns: Spark would add a partition directory's generation as one more.
    read_alone = spark.read.format(data_format).load(str(chosen)).select(*sinks.V1_COLUMNS)
    lost = set(sinks.table(read_alone))
    rest: list[tuple[str | None, ...]] = [row for row in FIRST_ROWS if row[1:] not in lost]
    return sink, chosen, rest


def checksum_of(path: Path) -> Path:
    """Hadoop's checksum file beside a file it wrote."""
    return path.with_name(f".{path.name}.crc")


def test_a_missing_committed_file_is_damage_and_left_out_of_reading(
    sink_format: SinkFormat, tmp_path: Path, spark: SparkSession
) -> None:
    sink, chosen, rest = damaged_generation(spark, tmp_path / "pipeline", sink_format)
    chosen.unlink()
    checksum_of(chosen).unlink(missing_ok=True)

    output = sink.output(1)

    assert [(d.generation, d.part, d.damage) for d in output.damaged] == [
        (1, Part.COMMITTED_FILE, Damage.MISSING)
    ]
    assert sinks.local_path(output.damaged[0].path) == chosen
    assert chosen not in [sinks.local_path(path) for path in output.files]
    assert output.batch_ids == (0, 1)  # what was committed, whatever became of it
    assert text_rows(sink.read(spark, [output])) == rest


def test_a_committed_file_of_another_size_is_damage(
    sink_format: SinkFormat, tmp_path: Path, spark: SparkSession
) -> None:
    sink, chosen, rest = damaged_generation(spark, tmp_path / "pipeline", sink_format)
    size = chosen.stat().st_size
    chosen.write_bytes(chosen.read_bytes() + b"\0\0\0\0")

    output = sink.output(1)

    assert [(d.generation, d.damage, d.detail) for d in output.damaged] == [
        (1, Damage.WRONG_SIZE, f"has {size + 4} bytes where the sink log committed {size}")
    ]
    assert sinks.local_path(output.damaged[0].path) == chosen
    assert text_rows(sink.read(spark, [output])) == rest


def test_a_committed_file_spark_cannot_read_is_named_and_read_around(
    sink_format: SinkFormat, tmp_path: Path, spark: SparkSession
) -> None:
    sink, chosen, rest = damaged_generation(spark, tmp_path / "pipeline", sink_format)
    content = chosen.read_bytes()
    middle = len(content) // 2
    # Same size, and Hadoop's checksum beside it kept: only reading its bytes can tell.
    chosen.write_bytes(content[:middle] + bytes([content[middle] ^ 0xFF]) + content[middle + 1 :])
    outputs = sink.outputs()
    assert [output.damaged for output in outputs] == [()]

    with pytest.raises(Exception) as raised:
        sink.read(spark, outputs).collect()
    damaged = sink.damage_in(failed_file(raised.value), outputs)

    assert damaged is not None
    assert (damaged.generation, damaged.part, damaged.damage) == (
        1,
        Part.COMMITTED_FILE,
        Damage.UNREADABLE,
    )
    assert sinks.local_path(damaged.path) == chosen

    def attempt(current: list[GenerationOutput]) -> list[tuple[str | None, ...]]:
        return text_rows(sink.read(spark, current))

    assert read_around_damage(sink, outputs, attempt, failed_file=failed_file) == rest


# --- backfills --------------------------------------------------------------------------------

MINUTE_MS = 60_000
TEN_O_CLOCK_MS = int(sinks.START.timestamp() * 1000)
BACKFILLED = "generation INT, " + sinks.V2


def backfill_of(number: int, ends_minutes: list[tuple[int, int]], rows: int) -> BackfillCommit:
    """Backfill ``number`` with version 2's query, owning the 10-minute windows whose end lies
    in each (after, through] of ``ends_minutes`` (minutes after 10:00)."""
    return BackfillCommit(
        backfill=number,
        pipeline="contract",
        generation=2,
        window=WindowSpec(10 * MINUTE_MS, 10 * MINUTE_MS, 0),
        grouping_keys=("article_id",),
        aggregates=(Aggregate("views", "count(*)"), Aggregate("users", "count(user_id)")),
        ranges=tuple(
            EndRange(TEN_O_CLOCK_MS + after * MINUTE_MS, TEN_O_CLOCK_MS + through * MINUTE_MS)
            for after, through in ends_minutes
        ),
        files=(),
        windows=sum((through - after) // 10 for after, through in ends_minutes),
        rows=rows,
        created_at_ms=1_795_341_600_000,
    )


def backfill_rows(spark: SparkSession, generation: int, *rows: sinks.Row) -> DataFrame:
    """A backfill's rows, as ``upgrade backfill`` writes them: the owner's generation first."""
    return spark.createDataFrame([(generation, *row.values()) for row in rows], BACKFILLED)


def both_generations(spark: SparkSession, root: Path, sink_format: SinkFormat) -> Sink:
    """The sink of ``root``, holding generations 1 and 2."""
    sinks.write_generation(spark, root, 1, FIRST, schema=sinks.V1, file_format=sink_format)
    sinks.write_generation(spark, root, 2, SECOND, schema=sinks.V2, file_format=sink_format)
    return sinks.sink_of(root, sink_format)


def test_a_backfill_replaces_the_rows_of_the_windows_it_owns_for_every_reader(
    sink_format: SinkFormat, tmp_path: Path, spark: SparkSession
) -> None:
    sink = both_generations(spark, tmp_path / "pipeline", sink_format)
    assert (sink.backfills(), sink.next_backfill()) == ([], 1)
    # The window 10:00-10:10 of generation 1, recomputed with users; "b" had no event left.
    commit = backfill_of(1, [(0, 10)], rows=1)
    moments: list[str] = []

    where = sink.write_backfill(
        backfill_rows(spark, 1, window(0, "a", 3, users=2)),
        commit,
        rows_written=lambda: moments.append("rows written"),
    )

    # Where a reader finds it: the table's version that committed it, or its directory. A
    # file sink's rows are written before its commit; a table's commit holds both.
    if SINKS[sink_format].one_table:
        table = re.escape(sink.location(1))
        assert re.fullmatch(rf"version \d+ of the Delta table {table}", where), where
        assert moments == []
    else:
        assert (where, moments) == ("output directory backfill-1", ["rows written"])
    assert [(c.backfill, c.ranges, c.rows) for c in sink.backfills()] == [(1, commit.ranges, 1)]
    assert sink.next_backfill() == 2
    both = sink.read(spark, sink.outputs())
    assert text_rows(both) == [
        ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "a", "3", "2"),
        (*FIRST_ROWS[2], None),
        *SECOND_ROWS,
    ]
    # Read one generation at a time, the backfilled row is its owner's.
    assert text_rows(sink.read(spark, sink.outputs([2]))) == SECOND_ROWS


def test_a_later_backfill_owns_the_windows_an_earlier_one_did(
    sink_format: SinkFormat, tmp_path: Path, spark: SparkSession
) -> None:
    sink = both_generations(spark, tmp_path / "pipeline", sink_format)
    sink.write_backfill(
        backfill_rows(spark, 1, window(0, "a", 3, users=2), window(0, "b", 1, users=1)),
        backfill_of(1, [(0, 10)], rows=2),
    )

    sink.write_backfill(
        backfill_rows(spark, 1, window(0, "a", 3, users=3), window(10, "a", 2, users=1)),
        backfill_of(2, [(0, 20)], rows=2),
    )

    assert [commit.backfill for commit in sink.backfills()] == [1, 2]
    assert sink.next_backfill() == 3
    assert text_rows(sink.read(spark, sink.outputs())) == [
        ("1", "2025-11-22 10:00:00", "2025-11-22 10:10:00", "a", "3", "3"),
        ("1", "2025-11-22 10:10:00", "2025-11-22 10:20:00", "a", "2", "1"),
        *SECOND_ROWS,
    ]
