"""The file sink (parquet, orc): one directory per generation, ``<root>/output/generation-<n>``,
whose ``_spark_metadata`` log alone says which of its files hold committed batches.

A batch that failed or was stopped mid-write leaves part files that no log names. Spark
honours the log only when it is given exactly that one directory (measured on 4.3):

* ``load(<root>/output/generation-2)`` returns the committed files only;
* a glob (``generation-*``), several paths at once, or ``<root>/output`` with
  ``recursiveFileLookup`` return the uncommitted files as well;
* a plain ``load(<root>/output)`` reads no file at all: ``generation-<n>`` is not a
  ``key=value`` partition directory, so Spark looks for files directly in ``output/``
  and fails with ``UNABLE_TO_INFER_SCHEMA``.

So each generation is read on its own and the results are unioned by column name
(``sink.union``). The logs themselves are read through ``storage`` (no JVM, ``sink.log``) to
say what each generation committed: Spark cannot infer a schema from a log without files.

Committed files can be damaged after they were committed (``records.damage``): the files the
log names are checked through ``storage`` first (``sink.integrity``), and a file only Spark
finds unreadable (a checksum, a footer) is told by its error (:meth:`FileSink.damage_in`). A
generation with damage is read from its other committed files, named one by one: a directory
would be read through its whole log, damaged files included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import unquote

from pyspark_kafka_upgrade._adapters.sink.committed import chosen_generations, damage_of
from pyspark_kafka_upgrade._adapters.sink.integrity import check_generation, read_generation_log
from pyspark_kafka_upgrade._adapters.storage.filesystem import open_location
from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit, backfill_directory_name
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile, FileReadFailure
from pyspark_kafka_upgrade._domain.records.sink import (
    GenerationOutput,
    Sink,
    Trigger,
    require_committed,
)
from pyspark_kafka_upgrade._domain.values.catalog import SINKS, SinkFormat
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
    output_root,
    parse_generation_directory_name,
    quarantine_root,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["FileSink"]


class FileSink(Sink):
    """Every generation's output under the pipeline root ``root`` (a URI, or an absolute
    path: Spark's executors may run elsewhere), as files of ``file_format``.

    ``quarantine``: the quarantine's directories (``<root>/quarantine/generation-<n>``)
    instead of the output's. ``located``: generations whose directory is elsewhere than the
    layout puts it (``checkpoint show --sink``).
    """

    def __init__(
        self,
        root: str,
        file_format: SinkFormat,
        *,
        quarantine: bool = False,
        located: Mapping[int, str] | None = None,
    ) -> None:
        self._root = root
        self._format = file_format
        self._quarantine = quarantine
        self._located = dict(located or {})

    def location(self, generation: int) -> str:
        if generation in self._located:
            return self._located[generation]
        layout = GenerationLayout(self._root, generation)
        return layout.quarantine if self._quarantine else layout.output

    def start(
        self,
        frame: DataFrame,
        *,
        generation: int,
        query_name: str,
        checkpoint: str,
        trigger: Trigger,
    ) -> StreamingQuery:
        # Spark's modules load with the first write or read: `upgrade plan` and `apply` open
        # the sink only to list what each generation committed, with the pipeline down.
        from pyspark_kafka_upgrade._adapters.sink.writer import start_file_sink

        return start_file_sink(
            frame,
            query_name=query_name,
            path=self.location(generation),
            checkpoint=checkpoint,
            file_format=self._format,
            trigger=trigger,
        )

    def generations(self) -> list[int]:
        """The generations with a directory here; names other than ``generation-<n>``
        (temporary directories, notes) are ignored."""
        directory = open_location(self._directory)
        found = []
        for name in directory.list_names():
            generation = parse_generation_directory_name(name)
            if generation is not None and directory.child(name).is_dir():
                found.append(generation)
        return sorted(found)

    def committed_batches(self, generation: int) -> tuple[int, ...]:
        # Only the log: a plan rests on which batches the sink committed, not on their files.
        return read_generation_log(generation, self.location(generation)).batch_ids

    def last_committed_batch(self, generation: int) -> int | None:
        batches = self.committed_batches(generation)
        return batches[-1] if batches else None

    def output(self, generation: int) -> GenerationOutput:
        check = check_generation(generation, self.location(generation))
        log = check.log
        if log is None:
            return GenerationOutput(generation, check.directory, damaged=check.damaged)
        return GenerationOutput(
            generation,
            check.directory,
            batch_ids=log.batch_ids,
            compact_batch_id=log.compact_batch_id,
            live_files=len(log.files),
            file_format=_format_of(entry.path for entry in log.files),
            files=tuple(entry.path for entry in check.healthy),
            damaged=check.damaged,
        )

    def outputs(self, generations: Iterable[int] | None = None) -> list[GenerationOutput]:
        chosen = chosen_generations(
            self.generations(),
            generations,
            none_present=(
                f"no output under {self._directory}: it holds no generation-<n> directory; "
                "has the pipeline run with this pipeline.root?"
            ),
            not_present=lambda generation: (
                f"no output directory for generation {generation}: "
                f"{self.location(generation)} does not exist"
            ),
        )
        return [self.output(generation) for generation in chosen]

    def read(self, spark: SparkSession, outputs: Sequence[GenerationOutput]) -> DataFrame:
        readable = require_committed(outputs)
        from pyspark_kafka_upgrade._adapters.sink.union import union_generations

        unioned = union_generations(readable, [self._load(spark, output) for output in readable])
        if self._quarantine or self._located:
            return unioned
        return self._with_backfills(spark, unioned, [output.generation for output in readable])

    def _with_backfills(
        self, spark: SparkSession, unioned: DataFrame, generations: Sequence[int]
    ) -> DataFrame:
        """The rows as readers see them: the windows a backfill owns from its files."""
        from pyspark_kafka_upgrade._adapters.sink.backfill_files import (
            read_backfills,
            superseded,
        )

        commits = self.backfills()
        if not commits:
            return unioned
        rows = superseded(unioned, commits)
        order = list(unioned.columns)
        for _, backfilled in read_backfills(spark, self._root, commits, self._format, generations):
            rows = rows.unionByName(backfilled, allowMissingColumns=True)
            order += [name for name in backfilled.columns if name not in order]
        return rows.select(*order)

    def damage_in(
        self, failure: FileReadFailure | None, outputs: Sequence[GenerationOutput]
    ) -> DamagedFile | None:
        return damage_of(failure, outputs)

    def backfills(self) -> list[BackfillCommit]:
        from pyspark_kafka_upgrade._adapters.sink.backfill_files import committed_backfills

        # Beside the generations' output: the quarantine's records are not backfilled.
        return [] if self._quarantine else committed_backfills(self._root)

    def next_backfill(self) -> int:
        return max((commit.backfill for commit in self.backfills()), default=0) + 1

    def write_backfill(
        self,
        rows: DataFrame,
        commit: BackfillCommit,
        *,
        rows_written: Callable[[], None] = lambda: None,
    ) -> str:
        from pyspark_kafka_upgrade._adapters.sink.backfill_files import (
            backfill_directory,
            commit_backfill,
            write_backfill_rows,
        )

        directory = backfill_directory(self._root, commit.backfill)
        files = write_backfill_rows(rows, directory, self._format)
        rows_written()
        commit_backfill(directory, dataclasses.replace(commit, files=files))
        return f"output directory {backfill_directory_name(commit.backfill)}"

    @property
    def _directory(self) -> str:
        return quarantine_root(self._root) if self._quarantine else output_root(self._root)

    def _load(self, spark: SparkSession, output: GenerationOutput) -> DataFrame:
        reader = spark.read.format(output.file_format or self._format)
        if not output.damaged:
            # One path per load(): only then does Spark read through that _spark_metadata.
            return reader.load(output.location)
        # Its healthy committed files by name: Spark would read the damaged ones through the
        # log. Hadoop takes a path's text as it is, where the log holds a URI with %-escapes.
        return reader.load([unquote(path) for path in output.files])


_FILE_FORMATS = frozenset(name for name, kind in SINKS.items() if kind.class_name == "FileSink")


def _format_of(paths: Iterable[str]) -> str | None:
    """The format when every committed file's name ends with it (Spark's part-*.parquet)."""
    formats = {path.rsplit(".", 1)[-1] for path in paths}
    if len(formats) == 1 and formats <= _FILE_FORMATS:
        return formats.pop()
    return None
