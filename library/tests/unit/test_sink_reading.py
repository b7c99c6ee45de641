"""Reading around committed files Spark cannot read, with an attempt that fails as Spark would
(Spark's own errors on real damage are in ``tests/integration/test_verify.py``)."""

from __future__ import annotations

import pytest

from pyspark_kafka_upgrade._adapters.sink.file_sink import (
    FileSink,
)
from pyspark_kafka_upgrade._adapters.sink.reading import (
    read_around_damage,
)
from pyspark_kafka_upgrade._domain.records.damage import (
    Damage,
    FileReadFailure,
)
from pyspark_kafka_upgrade._domain.records.sink import (
    GenerationOutput,
)
from pyspark_kafka_upgrade._domain.records.sink_errors import (
    IntegrityError,
)

# Opening a file sink reads nothing: it only tells which committed file an error names.
SINK = FileSink("/o", "parquet")


def two_generations() -> list[GenerationOutput]:
    return [
        GenerationOutput(
            1,
            "/o/generation-1",
            (0,),
            live_files=1,
            file_format="parquet",
            files=("file:///o/generation-1/a",),
        ),
        GenerationOutput(
            2,
            "/o/generation-2",
            (1,),
            live_files=2,
            file_format="parquet",
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

    assert read_around_damage(SINK, two_generations(), attempt, failed_file=spark_says) == "report"
    assert seen == [
        [("file:///o/generation-1/a",), ("file:///o/generation-2/b", "file:///o/generation-2/c")],
        [("file:///o/generation-1/a",), ("file:///o/generation-2/c",)],
    ]


def test_the_attempt_that_succeeds_sees_the_damage_on_its_generation() -> None:
    def attempt(outputs: list[GenerationOutput]) -> list[tuple[int, str, Damage]]:
        if outputs[0].files:
            raise SparkFailed("/o/generation-1/a")
        return [(o.generation, f.detail, f.damage) for o in outputs for f in o.damaged]

    found = read_around_damage(SINK, two_generations(), attempt, failed_file=spark_says)

    assert found == [
        (1, "cannot be read by Spark (FAILED_READ_FILE.NO_HINT: BadThing: no)", Damage.UNREADABLE)
    ]


def test_an_error_about_anything_else_is_raised_as_it_is() -> None:
    def attempt(outputs: list[GenerationOutput]) -> None:
        raise SparkFailed("file:///somewhere/else")

    with pytest.raises(SparkFailed):
        read_around_damage(SINK, two_generations(), attempt, failed_file=spark_says)


def test_past_the_limit_of_unreadable_files_it_stops_in_one_line() -> None:
    def attempt(outputs: list[GenerationOutput]) -> None:
        first = next(path for output in outputs for path in output.files)
        raise SparkFailed(first)

    with pytest.raises(IntegrityError) as raised:
        read_around_damage(SINK, two_generations(), attempt, failed_file=spark_says, limit=1)

    assert str(raised.value) == (
        "generation 1's committed file a cannot be read by Spark (FAILED_READ_FILE.NO_HINT: "
        "BadThing: no): the output was changed outside the pipeline, or the storage damaged "
        "it; restore it from a backup, or check the storage itself: it may be failing (1 more "
        "damaged in generation 2: `verify --json` lists each)"
    )
