"""Read the windowed output of every generation as one DataFrame, committed rows only.

Each generation writes its own directory, ``<root>/output/generation-<n>``, and only that
directory's ``_spark_metadata`` log says which of its files belong to committed batches;
a batch that failed or was stopped mid-write leaves part files that no log names. Spark
honours the log only when it is given exactly that one directory (measured on 4.3):

* ``load(<root>/output/generation-2)`` returns the committed files only;
* a glob (``generation-*``), several paths at once, or ``<root>/output`` with
  ``recursiveFileLookup`` return the uncommitted files as well;
* a plain ``load(<root>/output)`` reads no file at all: ``generation-<n>`` is not a
  ``key=value`` partition directory, so Spark looks for files directly in ``output/``
  and fails with ``UNABLE_TO_INFER_SCHEMA``.

So each generation is read on its own and the results are unioned by column name. The
logs themselves are read through ``storage`` (no JVM) to decide which generations have
anything committed: Spark cannot infer a schema from a log without files.

Committed files can be damaged after they were committed (``model.damage``): the files the
log names are checked through ``storage`` first (``sink.integrity``), and a file only Spark
finds unreadable (a checksum, a footer) is told by its error (``spark.errors``, which the use
case passes in: that adapter is this one's sibling). A generation
with damage is read from its other committed files, named one by one: a directory would be
read through its whole log, damaged files included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from typing import TypeVar
from urllib.parse import unquote

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructType

from pyspark_kafka_upgrade._adapters.sink.integrity import IntegrityError, check_generation
from pyspark_kafka_upgrade._adapters.sink.log import read_sink_log
from pyspark_kafka_upgrade._adapters.storage.filesystem import (
    absolute_uri,
    location_key,
    open_location,
)
from pyspark_kafka_upgrade._core.formats.sink_log import SinkFileEntry
from pyspark_kafka_upgrade._core.query.columns import WINDOW_END, WINDOW_START
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile, FileReadFailure
from pyspark_kafka_upgrade._domain.values.catalog import SINK_FORMATS, SinkFormat
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
    output_root,
    parse_generation_directory_name,
)

__all__ = [
    "GENERATION",
    "MAX_UNREADABLE",
    "FileFormat",
    "GenerationOutput",
    "IncompatibleGenerationsError",
    "NoOutputError",
    "committed_files",
    "damage_in",
    "describe_generations",
    "generations_present",
    "read_around_damage",
    "read_generations",
    "read_output",
    "require_committed",
]

GENERATION = "generation"
_LEADING = (WINDOW_START, WINDOW_END)

FileFormat = SinkFormat
Result = TypeVar("Result")

# Files Spark may find unreadable, one attempt each, before a reader gives up: past a few, the
# storage itself is failing, and every attempt reads the output again.
MAX_UNREADABLE = 10


class NoOutputError(PipelineError):
    """There is nothing committed to read; the message names the directory looked in."""


class IncompatibleGenerationsError(PipelineError):
    """The generations' output cannot be one table with a ``generation`` column.

    Either two generations wrote a column with types that cannot be unioned, or the output
    already has a column of that name.
    """


@dataclass(frozen=True, slots=True)
class GenerationOutput:
    """What one generation's sink log says was committed to its output directory."""

    generation: int
    directory: str
    last_batch_id: int | None  # None: no batch committed yet (or no _spark_metadata at all)
    live_files: int  # files the log names as committed and not deleted since
    # What its committed files are, from their names; None when they do not say. An
    # upgrade may change sink.format, so each generation is read in its own.
    file_format: str | None = None
    # The committed files to read, as the log names them: all of them but the damaged ones.
    files: tuple[str, ...] = ()
    damaged: tuple[DamagedFile, ...] = ()  # committed files (or the log) that cannot be read

    @property
    def has_output(self) -> bool:
        # A committed batch with no rows still writes a file with the schema (measured), so
        # a log without live files has nothing Spark could even infer a schema from.
        return self.last_batch_id is not None and bool(self.files)


def generations_present(root: str) -> list[int]:
    """The generations that have an output directory under ``<root>/output``, ascending.

    Names other than ``generation-<n>`` (temporary directories, notes) are ignored.
    """
    directory = open_location(output_root(absolute_uri(root)))
    found = []
    for name in directory.list_names():
        generation = parse_generation_directory_name(name)
        if generation is not None and directory.child(name).is_dir():
            found.append(generation)
    return sorted(found)


def committed_files(root: str, generation: int) -> tuple[SinkFileEntry, ...]:
    """The files generation ``generation``'s sink log names as committed, in log order.

    Anything else in that output directory is debris of a batch that never committed.
    """
    return read_sink_log(GenerationLayout(absolute_uri(root), generation).output).files


def describe_generations(
    root: str, generations: Iterable[int] | None = None
) -> list[GenerationOutput]:
    """What each generation (default: every one present) committed, by generation, and
    which of its committed files are damaged (``sink.integrity``, one listing each).

    Raises NoOutputError when there is no generation at all, or when a requested one has no
    output directory.
    """
    root = absolute_uri(root)
    present = generations_present(root)
    if generations is None:
        if not present:
            raise NoOutputError(
                f"no output under {output_root(root)}: it holds no generation-<n> directory; "
                "has the pipeline run with this pipeline.root?"
            )
        chosen = present
    else:
        chosen = sorted(set(generations))
        missing = [generation for generation in chosen if generation not in present]
        if missing:
            directory = GenerationLayout(root, missing[0]).output
            available = ", ".join(map(str, present)) or "none"
            raise NoOutputError(
                f"no output directory for generation {missing[0]}: {directory} does not "
                f"exist; generations with output: {available}"
            )
    outputs = []
    for generation in chosen:
        check = check_generation(generation, GenerationLayout(root, generation).output)
        log = check.log
        outputs.append(
            GenerationOutput(
                generation,
                check.directory,
                None if log is None else log.last_batch_id,
                0 if log is None else len(log.files),
                None if log is None else _format_of(entry.path for entry in log.files),
                files=tuple(entry.path for entry in check.healthy),
                damaged=check.damaged,
            )
        )
    return outputs


def _format_of(paths: Iterable[str]) -> str | None:
    """The format when every committed file's name ends with it (Spark's part-*.parquet)."""
    formats = {path.rsplit(".", 1)[-1] for path in paths}
    if len(formats) == 1 and formats <= set(SINK_FORMATS):
        return formats.pop()
    return None


def read_generations(
    spark: SparkSession, outputs: Sequence[GenerationOutput], *, file_format: FileFormat
) -> DataFrame:
    """The committed rows of ``outputs`` (from :func:`describe_generations`), unioned.

    Columns: ``generation`` (int), ``window_start``, ``window_end``, then the others in the
    newest generation's order, then any that only older generations have. A column a
    generation lacks (a metric added later) is null in its rows.

    Raises NoOutputError when none of them has committed anything yet.
    """
    readable = require_committed(outputs)
    loaded = [_load(spark, output, output.file_format or file_format) for output in readable]
    for output, frame in zip(readable, loaded, strict=True):
        # withColumn would silently replace it (names match case-insensitively by default).
        if any(name.lower() == GENERATION for name in frame.columns):
            raise IncompatibleGenerationsError(
                f"{output.directory} already has a column named {GENERATION!r}, the column "
                "that says which generation a row comes from; rename it in the aggregation"
            )
    frames = [
        frame.withColumn(GENERATION, F.lit(output.generation).cast(IntegerType()))
        for output, frame in zip(readable, loaded, strict=True)
    ]
    try:
        unioned = reduce(
            lambda left, right: left.unionByName(right, allowMissingColumns=True), frames
        )
    except AnalysisException as error:
        raise IncompatibleGenerationsError(_incompatibility(readable, frames, error)) from None
    return unioned.select(*_column_order(frame.columns for frame in reversed(frames)))


def _load(spark: SparkSession, output: GenerationOutput, file_format: str) -> DataFrame:
    reader = spark.read.format(file_format)
    if not output.damaged:
        # One path per load(): only then does Spark read through that _spark_metadata.
        return reader.load(output.directory)
    # Its healthy committed files by name: Spark would read the damaged ones through the log.
    # Hadoop takes a path's text as it is, where the log holds a URI with %-escapes.
    return reader.load([unquote(path) for path in output.files])


def damage_in(
    failure: FileReadFailure | None, outputs: Sequence[GenerationOutput]
) -> DamagedFile | None:
    """The committed file of ``outputs`` that Spark could not read, as ``failure``
    (``spark.errors.failed_file``) says, or None when it is not one of theirs (or is one
    already left out)."""
    if failure is None:
        return None
    key = location_key(failure.path)
    for output in outputs:
        for path in output.files:
            if location_key(path) == key:
                return failure.damage(output.generation, path)
    return None


def read_around_damage(
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
    one, which the use case passes in).
    """
    current = list(outputs)
    found: list[DamagedFile] = []
    while True:
        try:
            return attempt(current)
        except Exception as error:
            damaged = damage_in(failed_file(error), current)
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


def require_committed(outputs: Sequence[GenerationOutput]) -> list[GenerationOutput]:
    """Those of ``outputs`` with committed files; NoOutputError when there are none."""
    readable = [output for output in outputs if output.has_output]
    if not readable:
        directories = ", ".join(output.directory for output in outputs) or "(none)"
        raise NoOutputError(f"no committed batch yet in {directories}")
    return readable


def read_output(
    spark: SparkSession,
    root: str,
    *,
    file_format: FileFormat,
    generations: Iterable[int] | None = None,
) -> DataFrame:
    """Every committed row of every generation (or of ``generations``) under ``root``.

    ``root`` is the pipeline root (``pipeline.root``), not its ``output`` directory. See
    :func:`read_generations` for the columns; NoOutputError when there is nothing to read.
    """
    return read_generations(spark, describe_generations(root, generations), file_format=file_format)


def _column_order(newest_first: Iterable[Sequence[str]]) -> list[str]:
    seen: dict[str, None] = {}
    for columns in newest_first:
        seen.update(dict.fromkeys(columns))
    leading = [GENERATION, *(name for name in _LEADING if name in seen)]
    return [*leading, *(name for name in seen if name not in leading)]


def _incompatibility(
    outputs: Sequence[GenerationOutput], frames: Sequence[DataFrame], error: AnalysisException
) -> str:
    types: dict[str, dict[str, list[int]]] = {}
    for output, frame in zip(outputs, frames, strict=True):
        schema: StructType = frame.schema
        for field in schema.fields:
            by_type = types.setdefault(field.name, {})
            by_type.setdefault(field.dataType.simpleString(), []).append(output.generation)
    clashes = [
        f"{name} is "
        + " and ".join(
            f"{data_type} in generation(s) {', '.join(map(str, generations))}"
            for data_type, generations in by_type.items()
        )
        for name, by_type in types.items()
        if len(by_type) > 1
    ]
    reason = "; ".join(clashes) if clashes else str(error).splitlines()[0]
    return f"the generations' output cannot be read as one table: {reason}"
