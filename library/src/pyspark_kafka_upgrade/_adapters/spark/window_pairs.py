"""The expected side of `verify`: each event read back, in each window its owner puts it in.

One row per (event, window) pair, with the generation that owns the window and the pair's
state: counted, late (its batch's lateness bound had passed the window's end), arrived after
(its generation had stopped), outside its partitions (a partition its generation never had:
added after it stopped, or not subscribed), not read yet (the running generation is behind,
in a window still open to it), never read (before where its generation started: lost), or
unknown (a ledger gap). ``recompute`` aggregates the pairs and compares them with the
output; the pairs behind a finding are listed from here too (:func:`events_behind`).

A backfill computes windows on one grid, its generation's (:class:`Regrid`), from every
generation's events, also those read before a window change: each event in each window of
that grid holding it, read by the latest generation whose replay filter keeps the pair and
counted by the lateness bound of that generation's batch, in a window owned by the latest
generation that keeps the window's last instant. Without a window change, that is the
split above; with one at E, the new grid's windows ending by E are the old generation's and
hold what its batches counted, and a window across E holds both generations' events.

Times are microseconds since the epoch, as Spark's timestamps are (``US`` per millisecond).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from pyspark_kafka_upgrade._core.query.columns import EVENT_TIME
from pyspark_kafka_upgrade._core.reconciliation.scope import GenerationScope
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.verification import EventRef, PairState
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

__all__ = [
    "BATCH",
    "END",
    "OWNER",
    "READER",
    "START",
    "STATE",
    "US",
    "Regrid",
    "T",
    "events_behind",
    "owned_pairs",
]

# The pairs' own columns, beside the event's.
OWNER, START, END, T = "_owner", "_start_us", "_end_us", "_t_us"
# The generation whose batch read the event for this pair: the owner's, but in a window of a
# grid a backfill regrids (``Regrid``), that of the generation that kept the pair.
READER = "_reader"
STATE, BATCH = "_state", "_batch_id"
US = 1000  # microseconds per millisecond
_BEFORE_TIME = -(2**62)
# Most telling first: the events behind a finding are listed in this order of their states.
_SEVERITY = [
    PairState.SKIPPED,
    PairState.UNKNOWN,
    PairState.LATE,
    PairState.ARRIVED_AFTER,
    PairState.OUTSIDE,
    PairState.PENDING,
    PairState.COUNTED,
]

_SPANS = StructType(
    [
        StructField("g", IntegerType(), False),
        StructField("s_topic", StringType(), False),
        StructField("s_partition", IntegerType(), False),
        StructField("s_start", LongType(), False),
        StructField("s_end", LongType(), False),
        StructField("s_batch", LongType(), True),
        StructField("s_late_us", LongType(), False),
        StructField("s_on_time_us", LongType(), False),
    ]
)
_BOUNDS = StructType(
    [
        StructField("b_g", IntegerType(), False),
        StructField("b_topic", StringType(), False),
        StructField("b_partition", IntegerType(), False),
        StructField("b_first", LongType(), True),  # null: a partition it never had
        StructField("b_last", LongType(), True),
        StructField("b_outside", BooleanType(), False),
        # The running generation's: windows ending after this are open to it.
        StructField("b_open_after_us", LongType(), True),
    ]
)


@dataclass(frozen=True, slots=True)
class Regrid:
    """Every generation's events on one grid, grouped by ``keys``: the windows a backfill
    computes, or those its commit owns (``windows``, a condition on ``START`` and ``END``;
    None: every window in the range)."""

    window: WindowSpec
    keys: tuple[str, ...]
    windows: Column | None = None


def owned_pairs(
    spark: SparkSession,
    events: DataFrame,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    from_ms: int,
    to_ms: int | None,
    *,
    regrids: Sequence[Regrid] = (),
    own_grids: bool = True,
) -> DataFrame:
    """One row per (event, window) pair that falls in the range, with its owner and state.

    Pairs of an old window that a window change left unwritten by design (the retired owner
    stopped before its end, and its successor counts those events in windows of its own)
    are left out: nobody writes them.

    ``regrids``: their windows' pairs on their grid instead (``Regrid``); ``own_grids``:
    False for those pairs alone.
    """
    with_time = events.withColumn(T, F.unix_micros(F.col(EVENT_TIME)))
    parts = []
    if own_grids:
        owned = _candidates(with_time, scopes).where(
            _owned(scopes) & _in_range(scopes, from_ms, to_ms)
        )
        held = [regrid.windows for regrid in regrids if regrid.windows is not None]
        if held:
            owned = owned.where(~F.coalesce(reduce(lambda a, b: a | b, held), F.lit(False)))
        grouping = {
            key: F.col(OWNER).isin([s.generation for s in scopes if key in s.keys]) for key in keys
        }
        parts.append(
            _masked_keys(owned.withColumn(READER, F.col(OWNER)), grouping).select(
                *with_time.columns, OWNER, READER, START, END
            )
        )
    for regrid in regrids:
        pairs = _regridded(with_time, scopes, regrid, from_ms, to_ms)
        parts.append(_masked_keys(pairs, {key: F.lit(key in regrid.keys) for key in keys}))
    if not parts:
        raise ValueError("owned_pairs: no pairs asked for")
    candidates = reduce(DataFrame.unionByName, parts)
    located = _located(candidates, _spans(spark, scopes), _bounds(spark, scopes))
    inputs = sorted(
        {m.column for scope in scopes for m in scope.metrics if m.column != "*"} - set(keys)
    )
    return located.select(
        OWNER,
        READER,
        START,
        END,
        *keys,
        *inputs,
        T,
        "topic",
        "partition",
        "offset",
        _state().alias(STATE),
        F.col("s_batch").alias(BATCH),
    )


def _candidates(with_time: DataFrame, scopes: Sequence[GenerationScope]) -> DataFrame:
    """Each event once for every window of every generation's grid that holds its time."""
    candidates = [
        F.transform(_starts(scope.window), _window_of(scope.generation, scope.window))
        for scope in scopes
    ]
    return with_time.select("*", F.explode(F.flatten(F.array(*candidates))).alias("_pair")).select(
        *with_time.columns,
        F.col("_pair.g").alias(OWNER),
        F.col("_pair.s").alias(START),
        F.col("_pair.e").alias(END),
    )


def _regridded(
    with_time: DataFrame,
    scopes: Sequence[GenerationScope],
    regrid: Regrid,
    from_ms: int,
    to_ms: int | None,
) -> DataFrame:
    """Each event once for every window of ``regrid``'s grid that holds its time, read by the
    latest generation whose filter keeps the pair, owned by the latest that keeps the
    window's last instant (both the same, unless a window change split the generations in
    event time)."""
    size = regrid.window.duration_ms * US
    pairs = with_time.select("*", F.explode(_starts(regrid.window)).alias(START)).withColumn(
        END, F.col(START) + F.lit(size)
    )
    end = F.col(END)
    # No window change abandons a window here: every one of this grid is someone's.
    in_range = (F.col(START) >= F.lit(from_ms * US)) & (
        F.lit(True) if to_ms is None else end <= F.lit(to_ms * US)
    )
    if regrid.windows is not None:
        in_range = in_range & regrid.windows
    return (
        pairs.where(in_range)
        .select(
            *with_time.columns,
            _keeper(scopes, end - F.lit(1)).alias(OWNER),
            _keeper(scopes, F.col(T)).alias(READER),
            START,
            END,
        )
        .where(F.col(READER).isNotNull())
    )


def _starts(window: WindowSpec) -> Column:
    """The starts of ``window``'s grid windows holding the event's time: the multiples of
    the slide in (t - size, t]."""
    t = F.col(T)
    size, step = F.lit(window.duration_ms * US), F.lit(window.slide_ms * US).cast(LongType())
    last = t - F.pmod(t, step)
    first = (t - size) - F.pmod(t - size, step) + step
    return F.sequence(first, last, step)


def _keeper(scopes: Sequence[GenerationScope], t: Column) -> Column:
    """The latest generation whose replay filter keeps the pair (``t``, the window's end);
    null when none does. The latest, not the first whose successor drops it: on a grid not
    its own, a successor's filter by window end need not keep a subset of what the
    generation before it keeps (10-minute windows kept from W = 10:38, then 5-minute ones
    from E = 10:30: the pair (10:32, 10:30-10:35) is the 5-minute generation's)."""
    end = F.col(END)
    return reduce(
        lambda chain, scope: chain.when(_keeps(scope.owns, t, end), F.lit(scope.generation)),
        reversed(scopes),
        F.when(F.lit(False), F.lit(0)),
    )


def _owned(scopes: Sequence[GenerationScope]) -> Column:
    """Whether the pair's generation owns it: its replay filter keeps the pair, and the
    filter of the generation after it does not."""
    t, owner, end = F.col(T), F.col(OWNER), F.col(END)
    return reduce(
        lambda chain, scope: chain.when(
            owner == scope.generation,
            _keeps(scope.owns, t, end) & ~_keeps(scope.next_owns, t, end),
        ),
        scopes,
        F.when(F.lit(False), F.lit(False)),
    ).otherwise(F.lit(False))


def _in_range(scopes: Sequence[GenerationScope], from_ms: int, to_ms: int | None) -> Column:
    """Windows in [from_ms, to_ms), but none a window change left unwritten by design."""
    owner, end = F.col(OWNER), F.col(END)
    in_range = F.col(START) >= F.lit(from_ms * US)
    if to_ms is not None:
        in_range = in_range & (end <= F.lit(to_ms * US))
    for scope in scopes:
        if _abandons(scope) and scope.written_through_ms is not None:
            in_range = in_range & ~(
                (owner == scope.generation) & (end > F.lit(scope.written_through_ms * US))
            )
    return in_range


def _spans(spark: SparkSession, scopes: Sequence[GenerationScope]) -> DataFrame:
    """Which batch of which generation read each range of offsets, with its lateness bounds."""
    return spark.createDataFrame(
        [
            (
                scope.generation,
                span.topic,
                span.partition,
                span.start,
                span.end,
                span.batch_id,
                span.late_through_ms * US,
                span.on_time_after_ms * US,
            )
            for scope in scopes
            for span in scope.spans
        ],
        _SPANS,
    )


def _bounds(spark: SparkSession, scopes: Sequence[GenerationScope]) -> DataFrame:
    """Where each generation started and stopped reading each partition; a partition it
    never had is outside it."""
    # Every partition read back: every generation's, the offsets between generations too.
    read = {key for scope in scopes for key in (*scope.first_offsets, *scope.last_offsets)}
    return spark.createDataFrame(
        [
            (
                scope.generation,
                topic,
                partition,
                scope.first_offsets.get((topic, partition)),
                last,
                False,
                _open_after_us(scope),
            )
            for scope in scopes
            for (topic, partition), last in sorted(scope.last_offsets.items())
        ]
        + [
            (scope.generation, topic, partition, None, None, True, None)
            for scope in scopes
            for topic, partition in sorted(read)
            if scope.outside((topic, partition))
        ],
        _BOUNDS,
    )


def _located(owned: DataFrame, spans: DataFrame, bounds: DataFrame) -> DataFrame:
    """``owned`` with the reader's batch that read each event, and the reader's bounds."""
    reader, offset = F.col(READER), F.col("offset")
    return owned.join(
        F.broadcast(spans),
        (reader == F.col("g"))
        & (F.col("topic") == F.col("s_topic"))
        & (F.col("partition") == F.col("s_partition"))
        & (offset >= F.col("s_start"))
        & (offset < F.col("s_end")),
        "left",
    ).join(
        F.broadcast(bounds),
        (reader == F.col("b_g"))
        & (F.col("topic") == F.col("b_topic"))
        & (F.col("partition") == F.col("b_partition")),
        "left",
    )


def _state() -> Column:
    """A located pair's state (``PairState``)."""
    end, offset = F.col(END), F.col("offset")
    return (
        F.when(
            F.col("g").isNotNull(),
            F.when(end <= F.col("s_late_us"), PairState.LATE.value)
            .when(end > F.col("s_on_time_us"), PairState.COUNTED.value)
            .otherwise(PairState.UNKNOWN.value),
        )
        .when(F.col("b_outside"), PairState.OUTSIDE.value)
        .when(F.col("b_last").isNull(), PairState.SKIPPED.value)
        .when(offset < F.col("b_first"), PairState.SKIPPED.value)
        .when(
            offset >= F.col("b_last"),
            F.when(end > F.col("b_open_after_us"), PairState.PENDING.value).otherwise(
                PairState.ARRIVED_AFTER.value
            ),
        )
        # Before where the plan that retired it says it stopped, in batches nobody recorded.
        .when(F.col("b_first").isNull(), PairState.UNKNOWN.value)
        .otherwise(PairState.SKIPPED.value)
    )


def _open_after_us(scope: GenerationScope) -> int | None:
    """Where the running generation's open windows begin (their end after its watermark):
    a record it has not read yet is pending there, not late. None for the others."""
    if not scope.running:
        return None
    return _BEFORE_TIME if scope.written_through_ms is None else scope.written_through_ms * US


def _abandons(scope: GenerationScope) -> bool:
    """Whether the successor changed the window: the generations split in event time, and
    the old windows still open at the split are written by nobody, as the plan says."""
    following = scope.next_owns
    return (
        following is not None
        and following.window_end_after_ms is None
        and following.event_time_from_ms is not None
    )


def _window_of(generation: int, window: WindowSpec) -> Callable[[Column], Column]:
    size_us = window.duration_ms * US

    # One parameter exactly: F.transform passes the index too to a function taking two.
    def of(start: Column) -> Column:
        return F.struct(
            F.lit(generation).alias("g"), start.alias("s"), (start + F.lit(size_us)).alias("e")
        )

    return of


def _keeps(replay: ReplayFilter | None, t: Column, end: Column) -> Column:
    """Whether a generation started with ``replay`` keeps the pair (t, window end)."""
    if replay is None:
        return F.lit(False)
    kept = F.lit(True)
    if replay.event_time_from_ms is not None:
        kept = kept & (t >= F.lit(replay.event_time_from_ms * US))
    if replay.window_end_after_ms is not None:
        kept = kept & (end > F.lit(replay.window_end_after_ms * US))
    return kept


def _masked_keys(frame: DataFrame, grouping: Mapping[str, Column]) -> DataFrame:
    """``frame`` with each key null where ``grouping[key]`` says the window's query does not
    group by it."""
    return frame.withColumns(
        {key: F.when(grouped, F.col(key)) for key, grouped in grouping.items()}
    )


# -- The events behind the findings ----------------------------------------------------------


def events_behind(
    spark: SparkSession,
    pairs: DataFrame,
    listed: Sequence[Row],
    keys: Sequence[str],
    per_window: int,
) -> dict[tuple[object, ...], tuple[tuple[EventRef, ...], int]]:
    """For each window of ``listed`` (rows of the classified windows), up to ``per_window``
    of its pairs, most telling state first, and how many it has."""
    wanted = [row for row in listed if row[OWNER] is not None]
    if not wanted:
        return {}
    identity = [OWNER, START, END, *keys]
    chosen = spark.createDataFrame(
        [tuple(row[name] for name in identity) for row in wanted],
        pairs.select(*identity).schema,
    )
    on = reduce(
        lambda both, name: both & pairs[name].eqNullSafe(chosen[name]),
        identity[1:],
        pairs[identity[0]].eqNullSafe(chosen[identity[0]]),
    )
    severity = reduce(
        lambda chain, item: chain.when(F.col(STATE) == item[1].value, item[0]),
        enumerate(_SEVERITY),
        F.when(F.lit(False), 0),
    )
    ranked = Window.partitionBy(*identity).orderBy(severity, "topic", "partition", "offset")
    counted = Window.partitionBy(*identity)
    rows = (
        pairs.join(F.broadcast(chosen), on, "left_semi")
        .select(
            *identity,
            "topic",
            "partition",
            "offset",
            T,
            STATE,
            BATCH,
            F.row_number().over(ranked).alias("_rank"),
            F.count(F.lit(1)).over(counted).alias("_total"),
        )
        .where(F.col("_rank") <= per_window)
        .collect()
    )
    found: dict[tuple[object, ...], list[EventRef]] = {}
    totals: dict[tuple[object, ...], int] = {}
    for row in rows:
        identity_values = tuple(row[name] for name in identity)
        found.setdefault(identity_values, []).append(
            EventRef(
                topic=row["topic"],
                partition=int(row["partition"]),
                offset=int(row["offset"]),
                event_time_ms=int(row[T]) // US,
                state=row[STATE],
                batch_id=None if row[BATCH] is None else int(row[BATCH]),
            )
        )
        totals[identity_values] = int(row["_total"])
    return {
        key: (tuple(sorted(events, key=lambda e: (e.topic, e.partition, e.offset))), totals[key])
        for key, events in found.items()
    }
