"""Use case for `output show`: the committed windowed rows of every generation, for people.

Rows come through the pipeline's ``Sink``, which reads only what each generation committed
(the file sink: through its own log), so rows of batches that never committed are never
shown. Rows are ordered by window start, then generation, then the grouping keys, so a window
counted by two generations around an upgrade shows as neighbouring rows.

A damaged committed file (``records.damage``) stops it with one line, before Spark starts
when ``storage`` can see it, else from Spark's error: showing the rest as if they were the
whole output would hide the rows that file held.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import NumericType, TimestampType

from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.spark.session import command_session
from pyspark_kafka_upgrade._adapters.spark.spark_errors import failed_file
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._core.query.columns import WINDOW_START
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.sink import (
    GENERATION,
    GenerationOutput,
    Sink,
    require_committed,
)
from pyspark_kafka_upgrade._domain.records.sink_errors import IntegrityError
from pyspark_kafka_upgrade._domain.values.catalog import SINKS, SinkFormat
from pyspark_kafka_upgrade._domain.values.json_record import (
    Field,
    Group,
    JsonRecord,
    Shape,
    Written,
)
from pyspark_kafka_upgrade._domain.values.layout import output_root

DEFAULT_LIMIT = 20


class InvalidLimitError(PipelineError):
    """A negative number of rows to show."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class GenerationSummary(JsonRecord):
    generation: int
    directory: str
    last_batch_id: int | None  # None: nothing committed yet
    rows: int


@dataclass(frozen=True, slots=True)
class OutputReport(JsonRecord):
    """The rows ``output show`` prints, already in order and cut to the limit."""

    json_shape = Shape(
        "output",
        # Only with a catalog name (sink.table_name): a file sink's document is unchanged.
        Group("table", Field("table_name", key="name"), optional=True),
        Field("file_format", key="format"),
        "generations",
        Written("total_rows"),
        "order_by",
        "columns",
        Written("rows", lambda report: _json_rows(report)),
    )

    output: str  # <root>/output
    file_format: str
    generations: tuple[GenerationSummary, ...]
    order_by: tuple[str, ...]
    columns: tuple[str, ...]
    numeric: frozenset[str]  # columns right-aligned in the table
    rows: tuple[tuple[object, ...], ...]  # timestamps as UTC datetimes
    table_name: str | None = None  # the table's catalog name (sink.table_name), if any

    @property
    def total_rows(self) -> int:
        return sum(summary.rows for summary in self.generations)


def show_output(
    settings: Settings,
    *,
    spark: SparkSession | Callable[[], SparkSession] | None = None,
    limit: int | None = DEFAULT_LIMIT,
    as_json: bool = False,
    generation: int | None = None,
) -> str:
    """The output of every generation (or of ``generation``) under ``pipeline.root``.

    ``spark`` is a session, or a function that returns one, called only once the output
    directories and their logs have been read, so that nothing to show is said without
    starting Spark; by default a local session. ``limit`` caps the rows shown (None: all of
    them); the per-generation row counts always cover every row. Raises NoOutputError when
    there is nothing committed to show.
    """
    if limit is not None and limit < 0:
        raise InvalidLimitError(f"the number of rows to show must be 0 or more, got {limit}")
    root = absolute_uri(settings.pipeline.root)
    sink = open_sink(settings.sink, root)
    outputs = sink.outputs(None if generation is None else [generation])
    damaged = [file for output in outputs for file in output.damaged]
    if damaged:
        raise IntegrityError(damaged, _rest(outputs))  # before Spark starts, as below
    require_committed(outputs)  # before Spark starts: nothing to read is a quick answer
    session = command_session(settings, purpose="output", given=spark)()
    try:
        report = collect_report(
            session,
            sink,
            outputs,
            file_format=settings.sink.format,
            # The table every generation shares, else the directory of theirs.
            output=(
                outputs[0].location if SINKS[settings.sink.format].one_table else output_root(root)
            ),
            keys=settings.aggregation.keys,
            limit=limit,
            table_name=settings.sink.table_name or None,
        )
    except Exception as error:
        unreadable = sink.damage_in(failed_file(error), outputs)
        if unreadable is None:
            raise
        raise IntegrityError([unreadable], _rest(outputs, unreadable.generation)) from None
    return render_output(report, as_json=as_json)


def _rest(outputs: Sequence[GenerationOutput], damaged: int | None = None) -> str | None:
    """What to run to see the generations nothing is wrong with, if there are any."""
    healthy = [
        output.generation
        for output in outputs
        if output.has_output and not output.damaged and output.generation != damaged
    ]
    if not healthy:
        return None
    if len(healthy) == 1:
        return f"run `output show --generation {healthy[0]}` to see the rest"
    return (
        f"run `output show --generation N` with N one of {', '.join(map(str, healthy))} to see "
        "the rest"
    )


def collect_report(
    spark: SparkSession,
    sink: Sink,
    outputs: Sequence[GenerationOutput],
    *,
    file_format: SinkFormat,
    output: str,
    keys: Sequence[str],
    limit: int | None,
    table_name: str | None = None,
) -> OutputReport:
    """Read ``outputs`` through ``sink``, count rows per generation and collect the first
    ``limit`` rows."""
    frame = sink.read(spark, outputs)
    counts = {row[0]: row[1] for row in frame.groupBy(GENERATION).count().collect()}
    # Keys of this version that an older generation lacked are null there; sorting on them
    # is still well defined. Keys the output no longer has cannot be sorted on.
    order_by = tuple(name for name in (WINDOW_START, GENERATION, *keys) if name in frame.columns)
    ordered = frame.orderBy(*order_by)
    if limit is not None:
        ordered = ordered.limit(limit)
    timestamps = {
        index
        for index, field in enumerate(frame.schema.fields)
        if isinstance(field.dataType, TimestampType)
    }
    rows = tuple(
        tuple(
            _micros(value) if index in timestamps and value is not None else value
            for index, value in enumerate(row)
        )
        for row in _utc(ordered).collect()
    )
    return OutputReport(
        output=output,
        file_format=file_format,
        generations=tuple(
            GenerationSummary(
                generation=described.generation,
                directory=described.location,
                last_batch_id=described.last_batch_id,
                rows=counts.get(described.generation, 0),
            )
            for described in outputs
        ),
        order_by=order_by,
        columns=tuple(frame.columns),
        numeric=frozenset(
            field.name for field in frame.schema.fields if isinstance(field.dataType, NumericType)
        ),
        rows=rows,
        table_name=table_name,
    )


def render_output(report: OutputReport, *, as_json: bool) -> str:
    """Indented JSON with stable keys, or a summary and an aligned table for people."""
    if as_json:
        return json.dumps(report.to_json(), indent=2)
    fields = [("output", f"{report.output} ({report.file_format})")]
    if report.table_name:
        fields.append(("table name", report.table_name))
    for summary in report.generations:
        fields.append((f"generation {summary.generation}", _generation_line(summary)))
    fields.append(
        (
            "rows shown",
            f"{len(report.rows)} of {report.total_rows}, by {', '.join(report.order_by)}",
        )
    )
    width = max(len(name) for name, _ in fields)
    lines = [f"{name:<{width}}  {value}" for name, value in fields]
    if report.rows:
        lines += ["", *_table(report)]
    return "\n".join(lines)


def _utc(frame: DataFrame) -> DataFrame:
    # collect() turns a timestamp into a naive datetime in this process's local time zone,
    # whatever the session's; microseconds since the epoch are the same everywhere.
    return frame.select(
        *(
            F.unix_micros(F.col(field.name)).alias(field.name)
            if isinstance(field.dataType, TimestampType)
            else F.col(field.name)
            for field in frame.schema.fields
        )
    )


def _generation_line(summary: GenerationSummary) -> str:
    rows = "1 row" if summary.rows == 1 else f"{summary.rows} rows"
    if summary.last_batch_id is None:
        # Rows in a table without a batch of the pipeline's: another writer appended them.
        return f"{rows} (no batch of the pipeline's)" if summary.rows else "nothing committed yet"
    return f"{rows} (last batch {summary.last_batch_id})"


def _table(report: OutputReport) -> list[str]:
    cells = [[_text(value) for value in row] for row in report.rows]
    widths = [
        max(len(name), *(len(row[index]) for row in cells))
        for index, name in enumerate(report.columns)
    ]
    right = [name in report.numeric for name in report.columns]

    def line(values: Sequence[str]) -> str:
        padded = (
            value.rjust(width) if is_right else value.ljust(width)
            for value, width, is_right in zip(values, widths, right, strict=True)
        )
        return "  ".join(padded).rstrip()

    return [line(report.columns), *(line(row) for row in cells)]


def _text(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date):
        return _iso(value)
    return str(value)


def _json_rows(report: OutputReport) -> list[dict[str, object]]:
    """Each row as an object by column, its values as JSON can hold them."""
    return [
        {name: _json_value(value) for name, value in zip(report.columns, row, strict=True)}
        for row in report.rows
    ]


def _json_value(value: object) -> object:
    if isinstance(value, datetime | date):
        return _iso(value)
    if isinstance(value, Decimal):
        return str(value)  # a JSON number would go through float and lose digits
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN or infinity
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _iso(value: datetime | date) -> str:
    if not isinstance(value, datetime):
        return value.isoformat()
    if value.microsecond == 0:
        timespec = "seconds"
    elif value.microsecond % 1000 == 0:
        timespec = "milliseconds"
    else:
        timespec = "microseconds"
    return value.isoformat(timespec=timespec).replace("+00:00", "Z")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(micros: int) -> datetime:
    # timedelta keeps whole microseconds exact, where a float of seconds may round.
    return _EPOCH + timedelta(microseconds=micros)
