"""Reading a pipeline's output back through its sink, whatever the sink: around the
committed files Spark finds it cannot read, and all of it at once for other jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession

from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri, location_key
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile, FileReadFailure
from pyspark_kafka_upgrade._domain.records.sink import GenerationOutput, Sink
from pyspark_kafka_upgrade._domain.records.sink_errors import IntegrityError
from pyspark_kafka_upgrade._domain.values.catalog import SinkFormat

__all__ = ["MAX_UNREADABLE", "read_around_damage", "read_output"]

Result = TypeVar("Result")

# Files Spark may find unreadable, one attempt each, before a reader gives up: past a few, the
# storage itself is failing, and every attempt reads the output again.
MAX_UNREADABLE = 10


def read_around_damage(
    sink: Sink,
    outputs: Sequence[GenerationOutput],
    attempt: Callable[[list[GenerationOutput]], Result],
    *,
    failed_file: Callable[[BaseException], FileReadFailure | None],
    limit: int = MAX_UNREADABLE,
) -> Result:
    """``attempt(outputs)``; when Spark fails on a committed file it cannot read, the same
    again without that file (its damage added to its generation), for up to ``limit`` files.
    Any other error is raised as it is; IntegrityError past ``limit``.

    ``failed_file`` reads Spark's error (``spark.errors.failed_file``, an adapter beside this
    one, which the use case passes in); ``sink`` says which committed file it names.
    """
    current = list(outputs)
    found: list[DamagedFile] = []
    while True:
        try:
            return attempt(current)
        except Exception as error:
            damaged = sink.damage_in(failed_file(error), current)
            if damaged is None:
                raise
        found.append(damaged)
        if len(found) > limit:
            raise IntegrityError(found, "check the storage itself: it may be failing") from None
        current = [_without(output, damaged) for output in current]


def _without(output: GenerationOutput, damaged: DamagedFile) -> GenerationOutput:
    if output.generation != damaged.generation:
        return output
    key = location_key(damaged.path)
    return replace(
        output,
        files=tuple(path for path in output.files if location_key(path) != key),
        damaged=(*output.damaged, damaged),
    )


def read_output(
    spark: SparkSession,
    root: str,
    *,
    file_format: SinkFormat,
    generations: Iterable[int] | None = None,
) -> DataFrame:
    """Every committed row of every generation (or of ``generations``) under ``root``.

    ``root`` is the pipeline root (``pipeline.root``), not its ``output`` directory; the
    sink is the one ``file_format`` (``sink.format``) names. See ``records.sink.Sink.read``
    for the columns; NoOutputError when there is nothing to read.
    """
    sink = open_sink(file_format, absolute_uri(root))
    return sink.read(spark, sink.outputs(generations))
