"""Which windows a grid or a backfill holds, as Spark SQL conditions.

A backfill's commit owns the windows of its grid whose end lies in one of its ranges
(``BackfillCommit.covers``). The file sink applies that rule to the rows it reads, `verify`
and `upgrade backfill` to the windows they judge: adapters that may not import one another,
so the rule is written here once, as text each builds a column from (``F.expr``). The
conditions take two SQL expressions in microseconds since the epoch (a window's start and
end): ``unix_micros(window_start)`` over a sink's rows, a long column in a recomputation.
"""

from __future__ import annotations

from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

US = 1000  # microseconds per millisecond


def on_grid(window: WindowSpec, start_us: str, end_us: str) -> str:
    """True for the windows of ``window``'s grid: its length, its start on a slide."""
    size, slide = window.duration_ms * US, window.slide_ms * US
    return f"(({end_us}) - ({start_us}) = {size} AND pmod(({start_us}), {slide}) = 0)"


def owned_by(commit: BackfillCommit, start_us: str, end_us: str) -> str:
    """True for the windows ``commit`` owns: of its grid, its end in one of its ranges."""
    ends = " OR ".join(
        f"(({end_us}) > {part.after_ms * US} AND ({end_us}) <= {part.through_ms * US})"
        for part in commit.ranges
    )
    return f"({on_grid(commit.window, start_us, end_us)} AND ({ends or 'false'}))"
