"""Recompute every window from the source and compare it with what the generations wrote.

One Spark job over the records read back from Kafka, with the pipeline's own parsing and
aggregate functions, so every value comes out as the stream computed it (the same
HyperLogLog++ sketch, the same types):

    records ─ parse ─ valid events ─ each owner's windows ─ which batch read it ─ aggregate
                                                                                   │
    every generation's committed output ─ grouped per window and key ──────── full join
                                                                                   │
                                                            one status per window and key

Each (event, window) pair carries its state: counted, late (its batch's lateness bound had
passed the window's end), arrived after (its generation had stopped), outside its partitions
(a partition its generation never had: added after it stopped, or not subscribed), not read
yet (the running generation is behind, in a window still open to it), never read (before where
its generation started: lost), or unknown (a ledger gap). Nothing but the summary and
the non-exact windows comes back to the driver, so its memory does not grow with the range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Observation, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from pyspark_kafka_upgrade._adapters.spark import parsing
from pyspark_kafka_upgrade._adapters.spark.aggregation import metric_function
from pyspark_kafka_upgrade._core.query.columns import (
    EVENT_TIME,
    MALFORMED_REASON,
    WINDOW_END,
    WINDOW_START,
    TimeSource,
)
from pyspark_kafka_upgrade._core.reconciliation.scope import GenerationScope
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.verification import (
    EventRef,
    PairState,
    Status,
    WindowFinding,
)
from pyspark_kafka_upgrade._domain.values.project import EventField
from pyspark_kafka_upgrade._domain.values.validation import MetricSpec

_OWNER, _START, _END, _T = "_owner", "_start_us", "_end_us", "_t_us"
_STATE, _BATCH = "_state", "_batch_id"
_WRITES, _WRITERS, _STATUS = "_writes", "_writers", "_status"
_COUNTED, _LATE, _LOST, _UNKNOWN = "_n_counted", "_n_late", "_n_lost", "_n_unknown"
_US = 1000  # microseconds per millisecond
_BEFORE_TIME = -(2**62)
# Floating sums and averages merge partial sums in another order than one batch does.
_FLOAT_TOLERANCE = 1e-9
_SEVERITY = [
    PairState.SKIPPED,
    PairState.UNKNOWN,
    PairState.LATE,
    PairState.ARRIVED_AFTER,
    PairState.OUTSIDE,
    PairState.PENDING,
    PairState.COUNTED,
]
# Pairs dropped as the stream drops them: each makes its window "late by design".
_BY_DESIGN = (PairState.LATE.value, PairState.ARRIVED_AFTER.value, PairState.OUTSIDE.value)

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
class Parsing:
    """How the records are parsed: the pipeline's own rules, from its settings."""

    events: tuple[EventField, ...]
    time_source: TimeSource
    time_field: str
    max_value_bytes: int


@dataclass(frozen=True, slots=True)
class Reconciliation:
    counts: dict[str, int]
    findings: tuple[WindowFinding, ...]
    more_findings: int
    events_read: int
    late_pairs: int
    quarantined: int
    quarantine_sample: tuple[tuple[str, int, int, str], ...]


def reconcile(
    spark: SparkSession,
    raw: DataFrame,
    written: DataFrame | None,
    scopes: Sequence[GenerationScope],
    parsing_rules: Parsing,
    *,
    from_ms: int,
    to_ms: int | None,
    hidden_event_times: Sequence[tuple[int, int]] = (),
    only: Sequence[int] | None = None,
    max_findings: int = 200,
    events_per_finding: int = 20,
) -> Reconciliation:
    """Reconcile ``written`` (``sink.reader.read_generations``) with ``raw`` (the records
    read back), window by window, for windows in [from_ms, to_ms)."""
    inputs = Observation("verify_inputs")
    parsed = parsing.parse_events(
        raw,
        events=parsing_rules.events,
        time_source=parsing_rules.time_source,
        time_field=parsing_rules.time_field,
        max_value_bytes=parsing_rules.max_value_bytes,
    ).observe(
        inputs,
        F.count(F.lit(1)).alias("rows"),
        F.count(F.col(MALFORMED_REASON)).alias("malformed"),
    )
    keys = list(dict.fromkeys(key for scope in scopes for key in scope.keys))
    pairs = _owned_pairs(spark, parsing.valid_events(parsed), scopes, keys, from_ms, to_ms)
    expected = _expected(pairs, scopes, keys)
    found = _written(written, scopes, keys, from_ms, to_ms)
    # Not cached: an Observation inside a cached plan reports nothing. Only a run with
    # findings reads the source a second time.
    floating = frozenset(field.name for field in parsing_rules.events if field.type == "double")
    classified = _classify(expected, found, scopes, keys, hidden_event_times, floating)
    if only is not None:
        # The windows these generations own, or wrote: a duplicate by another one shows.
        chosen = F.array(*(F.lit(g) for g in only))
        classified = classified.where(
            F.col(_OWNER).isin(list(only)) | F.arrays_overlap(F.col(_WRITERS), chosen)
        )
    tallies = classified.groupBy(_STATUS).agg(
        F.count(F.lit(1)).alias("windows"), F.sum(F.col(_LATE)).alias("late")
    )
    counts: dict[str, int] = {}
    late_pairs = 0
    for row in tallies.collect():
        counts[row[_STATUS]] = int(row["windows"])
        late_pairs += int(row["late"] or 0)
    measured = inputs.get
    quiet = (Status.EXACT.value, Status.OPEN.value)
    listed = (
        classified.where(~F.col(_STATUS).isin(*quiet))
        .orderBy(_START, *keys, _OWNER)
        .limit(max_findings)
        .collect()
        if any(count for status, count in counts.items() if status not in quiet)
        else []
    )
    shown = sum(count for status, count in counts.items() if status not in quiet)
    behind = _events_behind(spark, pairs, listed, keys, events_per_finding) if listed else {}
    findings = tuple(_finding(row, scopes, keys, behind) for row in listed)
    malformed = int(measured.get("malformed", 0))
    sample: tuple[tuple[str, int, int, str], ...] = ()
    if malformed:
        sample = tuple(
            (row["topic"], int(row["partition"]), int(row["offset"]), row[MALFORMED_REASON])
            for row in parsed.where(F.col(MALFORMED_REASON).isNotNull())
            .select("topic", "partition", "offset", MALFORMED_REASON)
            .orderBy("topic", "partition", "offset")
            .limit(events_per_finding)
            .collect()
        )
    return Reconciliation(
        counts=counts,
        findings=findings,
        more_findings=max(0, shown - len(findings)),
        events_read=int(measured.get("rows", 0)),
        late_pairs=late_pairs,
        quarantined=malformed,
        quarantine_sample=sample,
    )


# -- The expected side: events, their owners' windows, the batch that read them ------------


def _owned_pairs(
    spark: SparkSession,
    events: DataFrame,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    from_ms: int,
    to_ms: int | None,
) -> DataFrame:
    """One row per (event, window) pair that falls in the range, with its owner and state.

    Pairs of an old window that a window change left unwritten by design (the retired owner
    stopped before its end, and its successor counts those events in windows of its own)
    are left out: nobody writes them.
    """
    time_us = F.unix_micros(F.col(EVENT_TIME))
    with_time = events.withColumn(_T, time_us)
    t = F.col(_T)
    candidates = []
    for scope in scopes:
        size, slide = scope.window.duration_ms * _US, scope.window.slide_ms * _US
        # The windows holding t: starts that are multiples of the slide in (t - size, t].
        step = F.lit(slide).cast(LongType())
        last = t - F.pmod(t, step)
        first = (t - F.lit(size)) - F.pmod(t - F.lit(size), step) + step
        starts = F.sequence(first, last, step)
        candidates.append(F.transform(starts, _window_of(scope.generation, size)))
    exploded = with_time.select(
        "*", F.explode(F.flatten(F.array(*candidates))).alias("_pair")
    ).select(
        *with_time.columns,
        F.col("_pair.g").alias(_OWNER),
        F.col("_pair.s").alias(_START),
        F.col("_pair.e").alias(_END),
    )
    owner, end = F.col(_OWNER), F.col(_END)
    kept = reduce(
        lambda chain, scope: chain.when(
            owner == scope.generation,
            _keeps(scope.owns, t, end) & ~_keeps(scope.next_owns, t, end),
        ),
        scopes,
        F.when(F.lit(False), F.lit(False)),
    ).otherwise(F.lit(False))
    in_range = F.col(_START) >= F.lit(from_ms * _US)
    if to_ms is not None:
        in_range = in_range & (end <= F.lit(to_ms * _US))
    for scope in scopes:
        if _abandons(scope) and scope.written_through_ms is not None:
            in_range = in_range & ~(
                (owner == scope.generation) & (end > F.lit(scope.written_through_ms * _US))
            )
    owned = exploded.where(kept & in_range)
    spans = spark.createDataFrame(
        [
            (
                scope.generation,
                span.topic,
                span.partition,
                span.start,
                span.end,
                span.batch_id,
                span.late_through_ms * _US,
                span.on_time_after_ms * _US,
            )
            for scope in scopes
            for span in scope.spans
        ],
        _SPANS,
    )
    # Every partition read back: every generation's, the offsets between generations too.
    read = {key for scope in scopes for key in (*scope.first_offsets, *scope.last_offsets)}
    bounds = spark.createDataFrame(
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
    offset = F.col("offset")
    located = owned.join(
        F.broadcast(spans),
        (owner == F.col("g"))
        & (F.col("topic") == F.col("s_topic"))
        & (F.col("partition") == F.col("s_partition"))
        & (offset >= F.col("s_start"))
        & (offset < F.col("s_end")),
        "left",
    ).join(
        F.broadcast(bounds),
        (owner == F.col("b_g"))
        & (F.col("topic") == F.col("b_topic"))
        & (F.col("partition") == F.col("b_partition")),
        "left",
    )
    state = (
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
    masked = [_masked_key(key, scopes) for key in keys]
    inputs = sorted(
        {m.column for scope in scopes for m in scope.metrics if m.column != "*"} - set(keys)
    )
    return located.select(
        _OWNER,
        _START,
        _END,
        *masked,
        *inputs,
        _T,
        "topic",
        "partition",
        "offset",
        state.alias(_STATE),
        F.col("s_batch").alias(_BATCH),
    )


def _open_after_us(scope: GenerationScope) -> int | None:
    """Where the running generation's open windows begin (their end after its watermark):
    a record it has not read yet is pending there, not late. None for the others."""
    if not scope.running:
        return None
    return _BEFORE_TIME if scope.written_through_ms is None else scope.written_through_ms * _US


def _abandons(scope: GenerationScope) -> bool:
    """Whether the successor changed the window: the generations split in event time, and
    the old windows still open at the split are written by nobody, as the plan says."""
    following = scope.next_owns
    return (
        following is not None
        and following.window_end_after_ms is None
        and following.event_time_from_ms is not None
    )


def _window_of(generation: int, size_us: int) -> Callable[[Column], Column]:
    # One parameter exactly: F.transform passes the index too to a function taking two.
    def window(start: Column) -> Column:
        return F.struct(
            F.lit(generation).alias("g"), start.alias("s"), (start + F.lit(size_us)).alias("e")
        )

    return window


def _keeps(replay: ReplayFilter | None, t: Column, end: Column) -> Column:
    """Whether a generation started with ``replay`` keeps the pair (t, window end)."""
    if replay is None:
        return F.lit(False)
    kept = F.lit(True)
    if replay.event_time_from_ms is not None:
        kept = kept & (t >= F.lit(replay.event_time_from_ms * _US))
    if replay.window_end_after_ms is not None:
        kept = kept & (end > F.lit(replay.window_end_after_ms * _US))
    return kept


def _masked_key(key: str, scopes: Sequence[GenerationScope]) -> Column:
    """The key's value for the owners that group by it; null for the others."""
    owners = [scope.generation for scope in scopes if key in scope.keys]
    return F.when(F.col(_OWNER).isin(owners), F.col(key)).alias(key)


def _expected(
    pairs: DataFrame, scopes: Sequence[GenerationScope], keys: Sequence[str]
) -> DataFrame:
    """Per owner, window and key: what its owner must have written, and its pairs' states."""
    state = F.col(_STATE)
    counted = state == PairState.COUNTED.value
    maybe = counted | (state == PairState.UNKNOWN.value)
    aggregates = [
        F.count(F.when(counted, 1)).alias(_COUNTED),
        F.count(F.when(state.isin(*_BY_DESIGN), 1)).alias(_LATE),
        F.count(F.when(state == PairState.SKIPPED.value, 1)).alias(_LOST),
        F.count(F.when(state == PairState.UNKNOWN.value, 1)).alias(_UNKNOWN),
    ]
    for scope in scopes:
        mine = F.col(_OWNER) == scope.generation
        for metric in scope.metrics:
            aggregates.append(_metric(metric, mine & counted).alias(_exact(scope, metric)))
            aggregates.append(_metric(metric, mine & maybe).alias(_maybe(scope, metric)))
    return pairs.groupBy(_OWNER, _START, _END, *keys).agg(*aggregates)


def _metric(metric: MetricSpec, include: Column) -> Column:
    argument = F.lit(1) if metric.column == "*" else F.col(metric.column)
    return metric_function(metric.function)(F.when(include, argument))


def _exact(scope: GenerationScope, metric: MetricSpec) -> str:
    return f"_e{scope.generation}_{metric.name}"


def _maybe(scope: GenerationScope, metric: MetricSpec) -> str:
    return f"_u{scope.generation}_{metric.name}"


def _written_name(name: str) -> str:
    return f"_w_{name}"


# -- The written side, and the comparison ---------------------------------------------------


def _metric_names(scopes: Sequence[GenerationScope]) -> list[str]:
    return list(dict.fromkeys(m.name for scope in scopes for m in scope.metrics))


def _written(
    written: DataFrame | None,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    from_ms: int,
    to_ms: int | None,
) -> DataFrame | None:
    """Per window and key: how many rows the generations wrote, by whom, with what values.

    A row the running generation may have written after the facts were read (a window it
    owns, ending after the last watermark they know) is left out: on a live pipeline it is
    still open to them. Every other row counts, even one past its writer's watermark: a
    retired generation's facts are final, and no generation writes a window its own replay
    filter drops or one of another grid than its own (a copied file).
    """
    if written is None:
        return None
    start, end = F.unix_micros(F.col(WINDOW_START)), F.unix_micros(F.col(WINDOW_END))
    rows = written.where(start >= F.lit(from_ms * _US))
    if to_ms is not None:
        rows = rows.where(end <= F.lit(to_ms * _US))
    for scope in scopes:
        if scope.running and scope.written_through_ms is not None:
            kept = (F.col("generation") != scope.generation) | (
                end <= F.lit(scope.written_through_ms * _US)
            )
            if scope.owns.window_end_after_ms is not None:
                kept = kept | (end <= F.lit(scope.owns.window_end_after_ms * _US))
            if scope.owns.event_time_from_ms is not None:
                # Its windows hold events from E on, so each ends after E.
                kept = kept | (end <= F.lit(scope.owns.event_time_from_ms * _US))
            # Nor does it write a window of another grid than its own.
            size, slide = scope.window.duration_ms * _US, scope.window.slide_ms * _US
            kept = kept | (end - start != F.lit(size)) | (F.pmod(start, F.lit(slide)) != 0)
            rows = rows.where(kept)
    present = set(written.columns)
    columns = [
        start.alias(_START),
        end.alias(_END),
        *(F.col(key) if key in present else F.lit(None).alias(key) for key in keys),
        F.col("generation"),
        *(
            (F.col(name) if name in present else F.lit(None)).alias(_written_name(name))
            for name in _metric_names(scopes)
        ),
    ]
    return (
        rows.select(*columns)
        .groupBy(_START, _END, *keys)
        .agg(
            F.count(F.lit(1)).alias(_WRITES),
            F.array_sort(F.collect_list("generation")).alias(_WRITERS),
            *(
                F.first(_written_name(name)).alias(_written_name(name))
                for name in _metric_names(scopes)
            ),
        )
    )


def _classify(
    expected: DataFrame,
    written: DataFrame | None,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    hidden_event_times: Sequence[tuple[int, int]],
    floating: frozenset[str] = frozenset(),
) -> DataFrame:
    identity = [_START, _END, *keys]
    if written is None:
        joined = expected.select(
            "*",
            F.lit(0).cast(LongType()).alias(_WRITES),
            F.array().cast("array<int>").alias(_WRITERS),
            *(F.lit(None).alias(_written_name(name)) for name in _metric_names(scopes)),
        )
    else:
        e, w = expected.alias("e"), written.alias("w")
        on = reduce(
            lambda both, name: both & F.col(f"e.{name}").eqNullSafe(F.col(f"w.{name}")),
            identity[1:],
            F.col(f"e.{identity[0]}").eqNullSafe(F.col(f"w.{identity[0]}")),
        )
        carried = [c for c in expected.columns if c not in identity]
        joined = e.join(w, on, "full_outer").select(
            *(F.coalesce(F.col(f"e.{name}"), F.col(f"w.{name}")).alias(name) for name in identity),
            *(F.col(f"e.{name}") for name in carried),
            F.coalesce(F.col(f"w.{_WRITES}"), F.lit(0)).alias(_WRITES),
            F.coalesce(F.col(f"w.{_WRITERS}"), F.array().cast("array<int>")).alias(_WRITERS),
            *(F.col(f"w.{_written_name(name)}") for name in _metric_names(scopes)),
        )
    return joined.withColumn(_STATUS, _status(scopes, hidden_event_times, floating))


def _status(
    scopes: Sequence[GenerationScope],
    hidden_event_times: Sequence[tuple[int, int]],
    floating: frozenset[str],
) -> Column:
    owner, end, writes = F.col(_OWNER), F.col(_END), F.col(_WRITES)
    counted, late = F.coalesce(F.col(_COUNTED), F.lit(0)), F.coalesce(F.col(_LATE), F.lit(0))
    lost, unknown = F.coalesce(F.col(_LOST), F.lit(0)), F.coalesce(F.col(_UNKNOWN), F.lit(0))
    hidden = reduce(
        lambda any_, span: (
            any_ | ((F.col(_START) <= F.lit(span[1] * _US)) & (end > F.lit(span[0] * _US)))
        ),
        hidden_event_times,
        F.lit(False),
    )
    still_open = F.lit(False)
    matches = F.lit(False)
    matches_maybe = F.lit(False)
    for scope in scopes:
        mine = owner == scope.generation
        through = scope.written_through_ms
        beyond = F.lit(True) if through is None else end > F.lit(through * _US)
        if scope.running:
            # Not written yet, whatever its events: never called lost. (A retired owner's
            # window past its last watermark is lost: nobody will write it.)
            still_open = still_open | (mine & beyond)
        matches = matches | (mine & _all_equal(scope, _exact, floating))
        matches_maybe = matches_maybe | (mine & _all_equal(scope, _maybe, floating))
    done = F.when(late > 0, Status.LATE.value).otherwise(Status.EXACT.value)
    return (
        F.when(writes > 1, Status.WRITTEN_TWICE.value)
        .when((writes == 0) & still_open, Status.OPEN.value)
        .when(lost > 0, Status.LOST.value)
        .when(
            owner.isNull(),
            F.when(hidden, Status.UNCLASSIFIED.value).otherwise(Status.DIFFERENT.value),
        )
        .when((writes == 0) & (counted == 0) & (unknown == 0), Status.LATE.value)
        .when((writes == 0) & (unknown > 0) & (counted == 0), Status.UNCLASSIFIED.value)
        .when(writes == 0, F.when(hidden, Status.UNCLASSIFIED.value).otherwise(Status.LOST.value))
        .when(matches, done)
        .when((unknown > 0) & matches_maybe, done)
        .when(hidden | (unknown > 0), Status.UNCLASSIFIED.value)
        .otherwise(Status.DIFFERENT.value)
    )


def _all_equal(
    scope: GenerationScope,
    name: Callable[[GenerationScope, MetricSpec], str],
    floating: frozenset[str],
) -> Column:
    return reduce(
        lambda every, metric: (
            every
            & _same(F.col(_written_name(metric.name)), F.col(name(scope, metric)), metric, floating)
        ),
        scope.metrics,
        F.lit(True),
    )


def _same(
    written: Column, expected: Column, metric: MetricSpec, floating: frozenset[str]
) -> Column:
    exact = written.eqNullSafe(expected)
    if not (metric.function == "avg" or (metric.function == "sum" and metric.column in floating)):
        return exact
    # A sum of doubles depends on the order of additions; integer sums compare exactly.
    close = F.abs(written - expected) <= F.lit(_FLOAT_TOLERANCE) * F.greatest(
        F.abs(written), F.abs(expected), F.lit(1.0)
    )
    return exact | F.coalesce(close, F.lit(False))


# -- The events behind the findings ----------------------------------------------------------


def _events_behind(
    spark: SparkSession,
    pairs: DataFrame,
    listed: Sequence[Row],
    keys: Sequence[str],
    per_window: int,
) -> dict[tuple[object, ...], tuple[tuple[EventRef, ...], int]]:
    wanted = [row for row in listed if row[_OWNER] is not None]
    if not wanted:
        return {}
    identity = [_OWNER, _START, _END, *keys]
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
        lambda chain, item: chain.when(F.col(_STATE) == item[1].value, item[0]),
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
            _T,
            _STATE,
            _BATCH,
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
                event_time_ms=int(row[_T]) // _US,
                state=row[_STATE],
                batch_id=None if row[_BATCH] is None else int(row[_BATCH]),
            )
        )
        totals[identity_values] = int(row["_total"])
    return {
        key: (tuple(sorted(events, key=lambda e: (e.topic, e.partition, e.offset))), totals[key])
        for key, events in found.items()
    }


def _finding(
    row: Row,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    behind: Mapping[tuple[object, ...], tuple[tuple[EventRef, ...], int]],
) -> WindowFinding:
    get = row.__getitem__
    owner = get(_OWNER)
    scope = next((s for s in scopes if s.generation == owner), None)
    expected: dict[str, object] = {}
    if scope is not None:
        expected = {metric.name: get(_exact(scope, metric)) for metric in scope.metrics}
    names = [m.name for m in scope.metrics] if scope is not None else _metric_names(scopes)
    writes = int(get(_WRITES))
    written = {name: get(_written_name(name)) for name in names} if writes else None
    identity = (owner, get(_START), get(_END), *(get(key) for key in keys))
    events, total = behind.get(identity, ((), 0))
    return WindowFinding(
        window_start_ms=int(get(_START)) // _US,
        window_end_ms=int(get(_END)) // _US,
        keys={key: get(key) for key in (scope.keys if scope is not None else keys)},
        status=Status(get(_STATUS)),
        owner=owner,
        writers=tuple(int(g) for g in get(_WRITERS)),
        expected=expected,
        written=written,
        events=events,
        more_events=max(0, total - len(events)),
    )
