"""What a backfill writes: the current query's values of the windows that need them.

The same pairs `verify` aggregates (``window_pairs``: each event in each window its owner
puts it in, with the batch that read it and whether that batch counted it), aggregated with
the current generation's metrics instead of the owner's:

    pairs ─ counted or never read ─ current metrics ─┐
                                                      ├─ per window: needs it? may it? ─▶ rows
    the output as readers see it ─ per window, key ───┘                                  ranges

A window is rewritten when any of its rows differs from those values (a metric the owner did
not compute, a row lost, written twice or changed), and only when it can be rewritten
exactly: not while it is open, not when retention deleted some of its records, not when a
ledger gap leaves unsure which events its owner counted and its row does not tell. Events an
owner never read (a naive restart) are counted: the value is what the stream should have
written. Events late by design stay out, as the stream left them out.

Only the chosen windows' ranges, the tallies and a sample of the windows left come back to
the driver; the rows go from the executors to the sink.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial, reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType

from pyspark_kafka_upgrade._adapters.spark import parsing
from pyspark_kafka_upgrade._adapters.spark.recompute import (
    holds_values,
    metric_over,
    same_value,
    written_name,
    written_windows,
)
from pyspark_kafka_upgrade._adapters.spark.window_pairs import (
    END,
    OWNER,
    READER,
    START,
    STATE,
    US,
    Regrid,
    owned_pairs,
)
from pyspark_kafka_upgrade._core.query.columns import WINDOW_END, WINDOW_START
from pyspark_kafka_upgrade._core.query.recipe import Parsing
from pyspark_kafka_upgrade._core.query.window_sql import on_grid
from pyspark_kafka_upgrade._core.reconciliation.scope import GenerationScope
from pyspark_kafka_upgrade._domain.records.backfill import EndRange
from pyspark_kafka_upgrade._domain.records.sink import GENERATION
from pyspark_kafka_upgrade._domain.records.verification import PairState
from pyspark_kafka_upgrade._domain.values.validation import MetricSpec

# Why a window that needs rewriting is left as it is, most telling first.
OPEN = "open"  # its owner is still writing it
RETENTION = "records deleted by retention"
UNSURE = "unsure which events its owner counted"
NO_EVENTS = "a row no event explains"
OTHER_QUERY = "events read by a generation of other grouping keys"
REASONS = (OPEN, RETENTION, OTHER_QUERY, UNSURE, NO_EVENTS)

# The pair states a backfill counts: what the owner counted, and what it never read (the
# value the stream should have written). Late, arrived-after and outside pairs stay out, as
# the stream left them out. Read when the values are computed (a test widens it on purpose).
COUNTED_STATES: tuple[PairState, ...] = (PairState.COUNTED, PairState.SKIPPED)

_INCLUDED, _UNKNOWN, _PENDING = "_n_included", "_n_unknown", "_n_pending"
_OTHER = "_n_other"  # pairs read by a generation of another grouping
# Unsure pairs read by another generation than the window's owner (before a window change):
# no row the owner wrote tells whether they were counted.
_FOREIGN_UNKNOWN = "_n_foreign_unknown"
_NEEDS, _BLOCK = "_needs", "_block"


@dataclass(frozen=True, slots=True)
class LeftWindow:
    """A window that needs rewriting and cannot be rewritten exactly."""

    start_ms: int
    end_ms: int
    reason: str


@dataclass(frozen=True, slots=True)
class BackfillValues:
    rows: DataFrame  # what to write, for the windows of ``ranges``
    ranges: tuple[EndRange, ...]
    windows: int  # chosen
    left: dict[str, int]  # reason -> windows left as they were
    left_sample: tuple[LeftWindow, ...]


def backfill_values(
    spark: SparkSession,
    raw: DataFrame,
    written: DataFrame | None,
    scopes: Sequence[GenerationScope],
    parsing_rules: Parsing,
    *,
    from_ms: int,
    to_ms: int | None,
    hidden_event_times: Sequence[tuple[int, int]] = (),
    sample: int = 20,
) -> BackfillValues:
    """The current generation's (``scopes[-1]``) values for the windows in [from_ms, to_ms)
    whose rows ``written`` (the output as readers see it) does not hold exactly."""
    current = scopes[-1]
    keys = list(current.keys)
    floating = frozenset(field.name for field in parsing_rules.events if field.type == "double")
    # Every generation's events on the current grid: after a window change, the new grid's
    # windows before the split too, from the batches of the generation that read them.
    # Those read by a generation of another grouping are not this query's to recompute.
    alike = [scope.generation for scope in scopes if scope.keys == current.keys]
    events = parsing.valid_events(parsing.parse_by(raw, parsing_rules))
    regrid = Regrid(current.window, current.keys)
    pairs = owned_pairs(
        spark, events, scopes, keys, from_ms, to_ms, regrids=[regrid], own_grids=False
    )
    # Read twice: the windows to choose, then their rows. Caching is cheaper than Kafka.
    expected = _expected(pairs, current, scopes, alike).cache()
    found = written_windows(written, scopes, keys, from_ms, to_ms)
    if found is not None:
        # Rows of another grid (a window change) are not this grid's windows.
        found = found.where(F.expr(on_grid(current.window, START, END)))
    judged = _judged(expected, found, current, scopes, alike, hidden_event_times, floating)
    per_window = (
        judged.groupBy(START, END)
        .agg(F.max(_NEEDS).alias(_NEEDS), F.min(_BLOCK).alias(_BLOCK))
        .where(F.col(_NEEDS))
        .cache()
    )
    chosen = per_window.where(F.col(_BLOCK).isNull()).select(START, END)
    ranges = _ranges(chosen, current.window.slide_ms * US)
    windows = sum(r.through_ms - r.after_ms for r in ranges) // current.window.slide_ms
    # An open window is its owner's to write, not one a backfill left: never reported.
    blocked = per_window.where(
        F.col(_BLOCK).isNotNull() & (F.col(_BLOCK) != F.lit(REASONS.index(OPEN)))
    )
    left = {
        REASONS[int(row[_BLOCK])]: int(row["windows"])
        for row in blocked.groupBy(_BLOCK).agg(F.count(F.lit(1)).alias("windows")).collect()
    }
    left_sample = tuple(
        LeftWindow(int(row[START]) // US, int(row[END]) // US, REASONS[int(row[_BLOCK])])
        for row in blocked.orderBy(START).limit(sample).collect()
    )
    rows = (
        judged.where(F.col("_included") > 0)
        .join(F.broadcast(chosen), [START, END], "left_semi")
        .select(
            F.timestamp_micros(F.col(START)).alias(WINDOW_START),
            F.timestamp_micros(F.col(END)).alias(WINDOW_END),
            *keys,
            *(F.col(_target(metric)).alias(metric.name) for metric in current.metrics),
            F.col(OWNER).cast(IntegerType()).alias(GENERATION),
        )
    )
    return BackfillValues(
        rows=rows,
        ranges=ranges,
        windows=windows,
        left=left,
        left_sample=left_sample,
    )


def _expected(
    pairs: DataFrame,
    current: GenerationScope,
    scopes: Sequence[GenerationScope],
    alike: Sequence[int],
) -> DataFrame:
    """Per owner, window and key: the current metrics over the events counted or never read
    (``_x_``), the same with the unsure ones (``_y_``), and each owner's own metrics over
    what it read itself, counted and counted-or-unsure, to tell which its row holds."""
    state = F.col(STATE)
    counted = state == PairState.COUNTED.value
    included = state.isin(*(pair_state.value for pair_state in COUNTED_STATES))
    unknown = state == PairState.UNKNOWN.value
    aggregates = [
        F.count(F.when(included, 1)).alias(_INCLUDED),
        F.count(F.when(unknown, 1)).alias(_UNKNOWN),
        F.count(F.when(state == PairState.PENDING.value, 1)).alias(_PENDING),
        F.count(F.when(~F.col(READER).isin(*alike), 1)).alias(_OTHER),
        F.count(F.when(unknown & (F.col(READER) != F.col(OWNER)), 1)).alias(_FOREIGN_UNKNOWN),
    ]
    for metric in current.metrics:
        aggregates.append(metric_over(metric, included).alias(_x(metric)))
        aggregates.append(metric_over(metric, included | unknown).alias(_y(metric)))
    for scope in scopes:
        if scope.generation not in alike:
            continue
        # A row its owner wrote holds what the owner's own batches read: in a window across
        # a window change, not what the generation before it read.
        mine = (F.col(OWNER) == scope.generation) & (F.col(READER) == scope.generation)
        for metric in scope.metrics:
            aggregates.append(metric_over(metric, mine & counted).alias(_owner_e(scope, metric)))
            aggregates.append(
                metric_over(metric, mine & (counted | unknown)).alias(_owner_u(scope, metric))
            )
    return pairs.groupBy(OWNER, START, END, *current.keys).agg(*aggregates)


def _judged(
    expected: DataFrame,
    found: DataFrame | None,
    current: GenerationScope,
    scopes: Sequence[GenerationScope],
    alike: Sequence[int],
    hidden_event_times: Sequence[tuple[int, int]],
    floating: frozenset[str],
) -> DataFrame:
    """Per window and key: the values to write, whether it needs them, what blocks it."""
    identity = [START, END, *current.keys]
    names = list(dict.fromkeys(m.name for scope in scopes for m in scope.metrics))
    if found is None:
        joined = expected.select(
            "*",
            F.lit(0).alias("_writes"),
            *(F.lit(None).alias(written_name(name)) for name in names),
        )
    else:
        e, w = expected.alias("e"), found.alias("w")
        on = reduce(
            lambda both, name: both & F.col(f"e.{name}").eqNullSafe(F.col(f"w.{name}")),
            identity[1:],
            F.col(f"e.{identity[0]}").eqNullSafe(F.col(f"w.{identity[0]}")),
        )
        carried = [c for c in expected.columns if c not in identity]
        joined = e.join(w, on, "full_outer").select(
            *(F.coalesce(F.col(f"e.{n}"), F.col(f"w.{n}")).alias(n) for n in identity),
            *(F.col(f"e.{name}") for name in carried),
            F.coalesce(F.col("w._writes"), F.lit(0)).alias("_writes"),
            *(F.col(f"w.{written_name(name)}") for name in names),
        )
    owner, end, writes = F.col(OWNER), F.col(END), F.col("_writes")
    in_states = F.coalesce(F.col(_INCLUDED), F.lit(0))
    unknown = F.coalesce(F.col(_UNKNOWN), F.lit(0))
    pending = F.coalesce(F.col(_PENDING), F.lit(0))
    # Which events the owner's row holds, when some are unsure: the row's own values say.
    holds_counted = holds_values(current.metrics, _x, floating)
    holds_unsure = holds_values(current.metrics, _y, floating)
    for scope in scopes:
        if scope.generation not in alike:
            continue
        mine = owner == scope.generation
        its_counted = holds_values(scope.metrics, partial(_owner_e, scope), floating)
        its_unsure = holds_values(scope.metrics, partial(_owner_u, scope), floating)
        holds_counted = holds_counted | (mine & its_counted)
        holds_unsure = holds_unsure | (mine & its_unsure)
    with_unsure = (unknown > 0) & ~holds_counted & holds_unsure
    included = in_states + F.when(with_unsure, unknown).otherwise(F.lit(0))
    targets = [
        F.when(with_unsure, F.col(_y(metric))).otherwise(F.col(_x(metric))).alias(_target(metric))
        for metric in current.metrics
    ]
    judged = joined.select("*", *targets, included.alias("_included"))
    matches = reduce(
        lambda every, metric: (
            every
            & same_value(F.col(written_name(metric.name)), F.col(_target(metric)), metric, floating)
        ),
        current.metrics,
        F.lit(True),
    )
    needs = F.when(F.col("_included") > 0, (writes != 1) | ~F.coalesce(matches, F.lit(False)))
    needs = needs.otherwise(writes > 0)
    open_ = pending > 0
    for scope in scopes:
        if scope.running:
            through = scope.written_through_ms
            beyond = F.lit(True) if through is None else end > F.lit(through * US)
            open_ = open_ | ((owner == scope.generation) & beyond)
    hidden = reduce(
        lambda any_, span: (
            any_ | ((F.col(START) <= F.lit(span[1] * US)) & (end > F.lit(span[0] * US)))
        ),
        hidden_event_times,
        F.lit(False),
    )
    foreign_unknown = F.coalesce(F.col(_FOREIGN_UNKNOWN), F.lit(0)) > 0
    unsure = ((unknown > 0) & ~holds_counted & ~holds_unsure) | foreign_unknown
    other = F.coalesce(F.col(_OTHER), F.lit(0)) > 0
    block = (
        F.when(open_, REASONS.index(OPEN))
        .when(hidden, REASONS.index(RETENTION))
        .when(other, REASONS.index(OTHER_QUERY))
        .when(unsure, REASONS.index(UNSURE))
        .when(owner.isNull(), REASONS.index(NO_EVENTS))
    )
    return judged.select("*", needs.alias(_NEEDS), block.alias(_BLOCK))


def _ranges(chosen: DataFrame, slide_us: int) -> tuple[EndRange, ...]:
    """The chosen windows' ends as ranges, found in Spark (islands of ends one slide
    apart): only the ranges come back to the driver."""
    ordered = Window.orderBy(END)
    # In longs: row_number is an int, and a few slides in microseconds overflow one.
    rank = F.row_number().over(ordered).cast(LongType())
    islands = (
        chosen.select(END)
        .distinct()
        .withColumn("_island", F.col(END) - rank * F.lit(slide_us))
        .groupBy("_island")
        .agg(F.min(END).alias("_first"), F.max(END).alias("_last"))
        .orderBy("_first")
        .collect()
    )
    return tuple(
        EndRange((int(row["_first"]) - slide_us) // US, int(row["_last"]) // US) for row in islands
    )


def _x(metric: MetricSpec) -> str:
    return f"_x_{metric.name}"


def _y(metric: MetricSpec) -> str:
    return f"_y_{metric.name}"


def _target(metric: MetricSpec) -> str:
    return f"_t_{metric.name}"


def _owner_e(scope: GenerationScope, metric: MetricSpec) -> str:
    return f"_oe{scope.generation}_{metric.name}"


def _owner_u(scope: GenerationScope, metric: MetricSpec) -> str:
    return f"_ou{scope.generation}_{metric.name}"
