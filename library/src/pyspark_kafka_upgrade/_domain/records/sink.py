"""The interface every sink implements, beside the ledger's ``OffsetStore``: writing each
generation's output, saying what it committed, and reading it back.

Exactly once within a generation is the sink's job (a file sink's ``_spark_metadata``, a
table's transaction ids); exactly once across generations is the replay filter's, whatever
the sink. Which generation owns which windows is the ledger's record, not the sink's.

Every implementation passes ``tests/contract/test_sink_contract.py``. Spark's types are
named for the type checker only: this module loads no pyspark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile, FileReadFailure
from pyspark_kafka_upgrade._domain.records.sink_errors import NoOutputError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

GENERATION = "generation"
"""The column that says which generation wrote a row, in everything a sink reads back."""


@dataclass(frozen=True, slots=True)
class Trigger:
    """Run a batch every ``interval`` (a Spark interval), or all available data then stop."""

    interval: str | None = None
    available_now: bool = False


@dataclass(frozen=True, slots=True)
class GenerationOutput:
    """What one generation's sink says it committed, and which of it cannot be read.

    Only the sink's own record of its commits is read for this (its log), and storage's
    listing of where the committed files are: never a row.
    """

    generation: int
    location: str  # the generation's directory, or the table it appends to
    batch_ids: tuple[int, ...] = ()  # batches the sink still records as committed, ascending
    # A file sink's latest compacted batch, whose log file holds every batch before it; None
    # before the first compaction, and for sinks that do not compact.
    compact_batch_id: int | None = None
    live_files: int = 0  # files committed and not deleted since, damaged ones included
    # What its committed files are, from their names; None when they do not say. An
    # upgrade may change sink.format, so each generation is read in its own.
    file_format: str | None = None
    # The committed files to read, as the sink's log names them: all but the damaged ones.
    files: tuple[str, ...] = ()
    damaged: tuple[DamagedFile, ...] = ()  # committed files (or the log) that cannot be read

    @property
    def last_batch_id(self) -> int | None:
        """The last batch the sink committed (None: none yet); a restart skips up to it."""
        return self.batch_ids[-1] if self.batch_ids else None

    @property
    def has_output(self) -> bool:
        # A committed batch with no rows still writes a file with the schema (measured), so
        # a log without live files has nothing Spark could even infer a schema from. Files
        # the log names are committed whoever wrote them: a table's log also names files
        # another writer appended under a generation with no batch of the pipeline's (Delta's
        # own streaming sink, a backfill), rows every reader of the table sees.
        return bool(self.files)


def require_committed(outputs: Sequence[GenerationOutput]) -> list[GenerationOutput]:
    """Those of ``outputs`` with committed files; NoOutputError when there are none."""
    readable = [output for output in outputs if output.has_output]
    if not readable:
        locations = ", ".join(output.location for output in outputs) or "(none)"
        raise NoOutputError(f"no committed batch yet in {locations}")
    return readable


class Sink(Protocol):
    """Where every generation of one pipeline appends its windowed output.

    Opened on a pipeline root with the settings' sink format (``_adapters.sink.opening``),
    it starts no JVM until asked to write or read. What was committed is read from the
    sink's own record (a file sink's ``_spark_metadata``, a table's log) through storage,
    never from the rows; the rows only through :meth:`read`, which leaves damaged files out.
    """

    def location(self, generation: int) -> str:
        """Where ``generation``'s output lives: a directory of its own, or the table every
        generation shares."""
        ...

    def start(
        self,
        frame: DataFrame,
        *,
        generation: int,
        query_name: str,
        checkpoint: str,
        trigger: Trigger,
    ) -> StreamingQuery:
        """Start appending the streaming ``frame`` as ``generation``'s output, each batch
        exactly once: a batch the sink committed already is skipped when the query restarts
        on ``checkpoint``."""
        ...

    def generations(self) -> list[int]:
        """The generations that have any output, ascending."""
        ...

    def committed_batches(self, generation: int) -> tuple[int, ...]:
        """The batches ``generation``'s sink records as committed, ascending; none before
        its first. From the sink's log alone: no committed file is looked at.

        Raises IntegrityError when this user may not read the log."""
        ...

    def last_committed_batch(self, generation: int) -> int | None:
        """The last batch ``generation``'s sink committed (None: none), the one fact a plan
        needs: as cheap as the sink can say it (a table's snapshot, not its whole history).

        Raises IntegrityError when this user may not read the log."""
        ...

    def output(self, generation: int) -> GenerationOutput:
        """What ``generation`` committed (nothing, before its first batch) and which of its
        committed files are damaged: gone, of another size, or out of this user's reach. A
        log this user may not read is damage too, not an error: the other generations can
        still be read."""
        ...

    def outputs(self, generations: Iterable[int] | None = None) -> list[GenerationOutput]:
        """:meth:`output` of each of ``generations`` (default: :meth:`generations`), by
        generation.

        Raises NoOutputError when there is no generation at all, or when one asked for has
        no output."""
        ...

    def read(self, spark: SparkSession, outputs: Sequence[GenerationOutput]) -> DataFrame:
        """The committed rows of ``outputs`` (from :meth:`outputs`), without their damaged
        files, as one DataFrame: ``generation`` (int), ``window_start``, ``window_end``, then
        the other columns, newest generation's order first. A column a generation lacks is
        null in its rows.

        Raises NoOutputError when none of them committed anything, and
        IncompatibleGenerationsError when their columns do not fit in one table."""
        ...

    def damage_in(
        self, failure: FileReadFailure | None, outputs: Sequence[GenerationOutput]
    ) -> DamagedFile | None:
        """The committed file of ``outputs`` that Spark's ``failure`` is about, as damage of
        its generation; None when it is none of theirs (or one left out already)."""
        ...

    def backfills(self) -> list[BackfillCommit]:
        """The backfills committed to this sink, oldest first: the windows each owns from
        then on (a later one's over an earlier one's). :meth:`read` already reads those
        windows from them; `verify` judges them by their query."""
        ...

    def next_backfill(self) -> int:
        """The number the next backfill commits under: after every one committed so far."""
        ...

    def write_backfill(
        self,
        rows: DataFrame,
        commit: BackfillCommit,
        *,
        rows_written: Callable[[], None] = lambda: None,
    ) -> str:
        """Make ``rows`` (``generation``, the window, the columns of ``commit``'s query)
        what readers see of the windows ``commit`` owns, all at once; where it is
        committed, in words (``output directory backfill-1``). A run killed before it
        returns leaves the sink as it was or with all of it; the same number written again
        changes nothing once committed.

        ``rows_written``: called when the rows are in storage and not yet committed, for a
        sink where that moment exists (tests kill there)."""
        ...
