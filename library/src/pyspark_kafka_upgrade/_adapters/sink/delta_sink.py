"""The Delta sink: one Delta Lake table, ``<root>/output/table`` or ``sink.table_location``,
that every generation appends to, each row marked with its generation (``delta_writer``),
registered under ``sink.table_name`` for readers when that is set (``delta_catalog``).

What each generation committed is read from the table's log with delta-rs (``delta_log``):
no JVM, so ``upgrade plan`` and ``apply`` stay as quick as with the file sink. Files a failed
batch left in the table's directory are no concern of a reader: Delta reads only what its log
names. Committed files that were changed afterwards are damage, found as the file sink finds
them (``integrity.damaged_files``: one listing per generation's partition) or from Spark's
error (:meth:`DeltaSink.damage_in`), and read around by naming the healthy files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import unquote

from pyspark_kafka_upgrade._adapters.sink.committed import chosen_generations, damage_of
from pyspark_kafka_upgrade._adapters.sink.delta_log import (
    TableLog,
    backfill_version,
    last_batch,
    read_table_log,
)
from pyspark_kafka_upgrade._adapters.sink.integrity import Listing, damaged_files
from pyspark_kafka_upgrade._adapters.storage.filesystem import (
    StorageError,
    location_key,
    open_location,
)
from pyspark_kafka_upgrade._core.query.columns import WINDOW_END, WINDOW_START
from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile, FileReadFailure
from pyspark_kafka_upgrade._domain.records.sink import (
    GENERATION,
    GenerationOutput,
    Sink,
    Trigger,
    require_committed,
)
from pyspark_kafka_upgrade._domain.values.catalog import SinkFormat
from pyspark_kafka_upgrade._domain.values.layout import table_location

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["DeltaSink"]

_FORMAT = "delta"


class DeltaSink(Sink):
    """Every generation's output in the Delta table of the pipeline rooted at ``root``.

    ``quarantine``: the quarantine's table (``<root>/quarantine/table``). ``location``: the
    table's (``sink.table_location``, absolute), if not the layout's; ``name``: the catalog
    name a run registers over it (``sink.table_name``), "" for none. ``located``: the
    table is elsewhere than the settings put it (``checkpoint show --sink``); one table
    holds every generation, so any generation's entry names it.
    """

    def __init__(
        self,
        root: str,
        sink_format: SinkFormat = "delta",
        *,
        quarantine: bool = False,
        located: Mapping[int, str] | None = None,
        location: str | None = None,
        name: str = "",
    ) -> None:
        given = sorted(set((located or {}).values()))
        if len(given) > 1:
            raise ValueError(f"one Delta table holds every generation, not {', '.join(given)}")
        self._table = given[0] if given else location or table_location(root, quarantine=quarantine)
        self.name = name

    def location(self, generation: int) -> str:
        return self._table

    def start(
        self,
        frame: DataFrame,
        *,
        generation: int,
        query_name: str,
        checkpoint: str,
        trigger: Trigger,
    ) -> StreamingQuery:
        from pyspark_kafka_upgrade._adapters.sink.delta_writer import start_delta_sink

        return start_delta_sink(
            frame,
            query_name=query_name,
            table=self._table,
            name=self.name,
            checkpoint=checkpoint,
            generation=generation,
            trigger=trigger,
        )

    def generations(self) -> list[int]:
        return read_table_log(self._table).generations

    def committed_batches(self, generation: int) -> tuple[int, ...]:
        return tuple(read_table_log(self._table).batches.get(generation, ()))

    def last_committed_batch(self, generation: int) -> int | None:
        return last_batch(self._table, generation)

    def output(self, generation: int) -> GenerationOutput:
        return self._output(read_table_log(self._table), generation)

    def outputs(self, generations: Iterable[int] | None = None) -> list[GenerationOutput]:
        log = read_table_log(self._table)
        chosen = chosen_generations(
            log.generations,
            generations,
            none_present=(
                f"no output in the Delta table {self._table}: no generation has committed "
                "to it; has the pipeline run with this pipeline.root and sink.table_location?"
            ),
            not_present=lambda generation: (
                f"no output for generation {generation} in the Delta table {self._table}"
            ),
        )
        return [self._output(log, generation) for generation in chosen]

    def read(self, spark: SparkSession, outputs: Sequence[GenerationOutput]) -> DataFrame:
        from pyspark.sql import functions as F

        readable = require_committed(outputs)
        generations = [output.generation for output in readable]
        table = spark.read.format(_FORMAT).load(self._table)
        if any(output.damaged for output in readable):
            # Delta would read every file its log names, damaged ones too: the healthy ones
            # are named one by one, with the table's schema (a file of an older generation
            # lacks the columns added since) and the partition directory's generation.
            files = [unquote(path) for output in readable for path in output.files]
            frame = spark.read.schema(table.schema).option("basePath", self._table).parquet(*files)
        else:
            frame = table.where(F.col(GENERATION).isin(generations))
        return frame.select(*_column_order(spark, readable))

    def damage_in(
        self, failure: FileReadFailure | None, outputs: Sequence[GenerationOutput]
    ) -> DamagedFile | None:
        return damage_of(failure, outputs)

    def backfills(self) -> list[BackfillCommit]:
        # As long as the log keeps their commits (delta.logRetentionDuration): older ones
        # are in the rows, which every reader sees, but no longer named.
        return list(read_table_log(self._table).backfills)

    def next_backfill(self) -> int:
        log = read_table_log(self._table)
        taken = [log.last_backfill or 0, *(commit.backfill for commit in log.backfills)]
        return max(taken) + 1

    def write_backfill(
        self,
        rows: DataFrame,
        commit: BackfillCommit,
        *,
        rows_written: Callable[[], None] = lambda: None,
    ) -> str:
        # One commit holds the rows and says which windows they own: no moment between.
        from pyspark_kafka_upgrade._adapters.sink.delta_writer import write_table_backfill

        write_table_backfill(rows, self._table, commit)
        version = backfill_version(self._table, commit.backfill)
        where = "the Delta table" if version is None else f"version {version} of the Delta table"
        return f"{where} {self._table}"

    def _output(self, log: TableLog, generation: int) -> GenerationOutput:
        committed = log.files.get(generation, ())
        batch_ids = tuple(log.batches.get(generation, ()))
        if not committed:
            return GenerationOutput(
                generation, self._table, batch_ids=batch_ids, file_format=_FORMAT
            )
        directories = sorted({_parent(entry.path) for entry in committed})
        listings = [_list(directory) for directory in directories]
        damaged = damaged_files(generation, committed, listings)
        bad = {location_key(file.path) for file in damaged}
        return GenerationOutput(
            generation,
            self._table,
            batch_ids=batch_ids,
            live_files=len(committed),
            file_format=_FORMAT,
            files=tuple(entry.path for entry in committed if location_key(entry.path) not in bad),
            damaged=damaged,
        )


def _column_order(spark: SparkSession, outputs: Sequence[GenerationOutput]) -> list[str]:
    """As the file sink orders them: ``generation``, the window, then the columns the newest
    generation wrote, then any only older ones did. The table holds every column any
    generation wrote; which ones a generation wrote, its files say (one footer each)."""
    seen: dict[str, None] = {}
    for output in sorted(outputs, key=lambda output: -output.generation):
        written = _written_columns(spark, output)
        seen.update(dict.fromkeys(name for name in written if name != GENERATION))
    leading = [GENERATION, *(name for name in (WINDOW_START, WINDOW_END) if name in seen)]
    return [*leading, *(name for name in seen if name not in leading)]


def _written_columns(spark: SparkSession, output: GenerationOutput) -> list[str]:
    # The first file whose footer reads: one Spark cannot read is the read's to report, by
    # its error (damage_in), not this look-up's.
    for path in output.files:
        try:
            return spark.read.parquet(unquote(path)).columns
        except Exception:
            continue
    return []


def _parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]


def _list(directory: str) -> Listing:
    try:
        return Listing(directory, open_location(directory).file_sizes())
    except StorageError as error:
        if not error.denied:
            raise
        return Listing(directory, None)
