"""What `upgrade backfill` plans or did, as one typed record: its ``--json`` document."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.backfill import EndRange
from pyspark_kafka_upgrade._domain.records.signature import Aggregate
from pyspark_kafka_upgrade._domain.records.verification import DeletedRange
from pyspark_kafka_upgrade._domain.values.json_fields import JsonFields
from pyspark_kafka_upgrade._domain.values.json_record import Field, FormatVersion, JsonRecord, Shape
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

FORMAT_VERSION = 1


class BackfillReportError(PipelineError):
    """A backfill report that is not one: the message names the field."""


def _spans(read: JsonFields, key: str) -> tuple[tuple[int, int], ...]:
    """Event-time spans, each written as [first, last]."""
    spans = []
    for index, item in enumerate(read.items(key)):
        match item:
            # JSON true is no time, though Python's bool is an int.
            case [int(first), int(last)] if type(first) is int and type(last) is int:
                spans.append((first, last))
            case _:
                raise BackfillReportError(
                    f"backfill report field '{key}[{index}]' must be [first, last] event times "
                    "in epoch milliseconds"
                )
    return tuple(spans)


@dataclass(frozen=True, slots=True)
class OlderQuery(JsonRecord):
    """A generation whose windows lack some of the current query's metrics, or that counted
    in other windows (``window``: its grid, when not the current query's)."""

    generation: int
    missing: tuple[str, ...]
    window: WindowSpec | None = None


@dataclass(frozen=True, slots=True)
class LeftWindows(JsonRecord):
    """Windows that need rewriting and were left as they were, for one reason."""

    reason: str
    windows: int


@dataclass(frozen=True, slots=True)
class LeftSample(JsonRecord):
    window_start_ms: int
    window_end_ms: int
    reason: str


@dataclass(frozen=True, slots=True)
class BackfillReport(JsonRecord):
    """The plan (``applied`` false: what it would read, what retention took) or the result
    (the windows it rewrote, those it left and why)."""

    json_shape = Shape(
        FormatVersion(
            FORMAT_VERSION,
            newer="the backfill report has format version {version}, newer than the "
            "{current} this version of the library reads",
        ),
        "pipeline",
        "generation",
        "aggregates",
        "applied",
        "from_ms",
        "to_ms",
        "older_queries",
        "offsets",
        "records",
        "deleted",
        Field("partial_event_times", read=_spans),
        "backfill",
        "committed_in",
        "windows",
        "rows",
        "ranges",
        "left",
        "left_sample",
        what="backfill report",
        error=BackfillReportError,
    )

    pipeline: str
    generation: int  # whose query computes the values
    aggregates: tuple[Aggregate, ...]
    applied: bool
    from_ms: int
    to_ms: int | None
    older_queries: tuple[OlderQuery, ...]
    offsets: Mapping[str, object]  # {"start": offsets JSON, "end": offsets JSON}
    records: int  # the records to read: the backfill's cost
    deleted: tuple[DeletedRange, ...]  # what retention took of them
    # Event times [first, last] that batches reading deleted records held: windows touching
    # them are never backfilled with a partial value.
    partial_event_times: tuple[tuple[int, int], ...]
    backfill: int | None = None  # the number committed; None: nothing written
    # Where, in words: "output directory backfill-1", "version 12 of the Delta table …".
    committed_in: str | None = None
    windows: int | None = None  # rewritten; None in a plan
    rows: int | None = None
    ranges: tuple[EndRange, ...] = ()
    left: tuple[LeftWindows, ...] = ()
    left_sample: tuple[LeftSample, ...] = ()
    format_version: int = FORMAT_VERSION
