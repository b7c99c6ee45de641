"""A backfill's commit: which windows it rewrote, with which query, in which files.

A backfill recomputes windows earlier generations wrote (or lost) with the current
generation's query, over exactly the events their owners counted, and writes them beside
the generations' output. The commit is the record every reader obeys: a window of the
commit's grid whose end lies in one of its ranges is read from the backfill, never from a
generation, and a later backfill supersedes an earlier one the same way.

The commit lives with the rows (a file sink: ``output/backfill-<n>/_backfill.json``, written
after its files), not in the ledger: only there is it atomic with the rows it describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.signature import Aggregate
from pyspark_kafka_upgrade._domain.values.json_record import FormatVersion, JsonRecord, Shape
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

FORMAT_VERSION = 1
COMMIT_FILE = "_backfill.json"
BACKFILL_PREFIX = "backfill-"


class BackfillRecordError(PipelineError):
    """A backfill commit that is not one: the message names the field."""


@dataclass(frozen=True, slots=True, order=True)
class EndRange:
    """Windows whose end lies in (after_ms, through_ms]."""

    after_ms: int
    through_ms: int

    def holds(self, end_ms: int) -> bool:
        return self.after_ms < end_ms <= self.through_ms


@dataclass(frozen=True, slots=True)
class BackfillCommit(JsonRecord):
    """One committed backfill: the windows it owns from now on, and its rows' files."""

    json_shape = Shape(
        FormatVersion(
            FORMAT_VERSION,
            newer="the backfill commit has format version {version}, newer than the "
            "{current} this version of the library reads: upgrade pyspark-kafka-upgrade",
            older="backfill commit format version {version} does not exist",
        ),
        "backfill",
        "pipeline",
        "generation",
        "window",
        "grouping_keys",
        "aggregates",
        "ranges",
        "files",
        "windows",
        "rows",
        "created_at_ms",
        what="backfill commit",
        error=BackfillRecordError,
    )

    backfill: int  # numbered from 1 per pipeline; a later one supersedes an earlier one
    pipeline: str
    generation: int  # whose query computed the values: the current one when it ran
    window: WindowSpec  # the grid of the windows it rewrote
    grouping_keys: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    ranges: tuple[EndRange, ...]  # the windows it owns, by their end
    files: tuple[str, ...]  # its rows, by name in its directory
    windows: int
    rows: int
    created_at_ms: int
    format_version: int = FORMAT_VERSION

    def covers(self, start_ms: int, end_ms: int) -> bool:
        """Whether the window [start_ms, end_ms) is this backfill's: of its grid, its end in
        one of its ranges."""
        return (
            end_ms - start_ms == self.window.duration_ms
            and start_ms % self.window.slide_ms == 0
            and any(part.holds(end_ms) for part in self.ranges)
        )


def end_ranges(ends_ms: Sequence[int], slide_ms: int) -> tuple[EndRange, ...]:
    """The fewest ranges holding exactly the window ends ``ends_ms`` of a grid that slides by
    ``slide_ms``: consecutive ends (one slide apart) share a range."""
    ranges: list[EndRange] = []
    for end in sorted(set(ends_ms)):
        if ranges and ranges[-1].through_ms + slide_ms == end:
            ranges[-1] = EndRange(ranges[-1].after_ms, end)
        else:
            ranges.append(EndRange(end - slide_ms, end))
    return tuple(ranges)


def backfill_directory_name(backfill: int) -> str:
    if backfill < 1:
        raise ValueError(f"backfills are numbered from 1, got {backfill}")
    return f"{BACKFILL_PREFIX}{backfill}"


def parse_backfill_directory_name(name: str) -> int | None:
    """The backfill a directory name such as ``backfill-2`` stands for, else None."""
    number = name.removeprefix(BACKFILL_PREFIX)
    if name == number or not (number.isascii() and number.isdigit()) or number[0] == "0":
        return None
    return int(number)
