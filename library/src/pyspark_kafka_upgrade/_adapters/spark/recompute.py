"""Recompute every window from the source and compare it with what the generations wrote.

One Spark job over the records read back from Kafka, with the pipeline's own parsing and
aggregate functions, so every value comes out as the stream computed it (the same
HyperLogLog++ sketch, the same types):

    records ─ parse ─ valid events ─ each owner's windows ─ which batch read it ─ aggregate
                                                                                   │
    every generation's committed output ─ grouped per window and key ──────── full join
                                                                                   │
                                                            one status per window and key

Each (event, window) pair carries its owner and its state (``window_pairs``: counted, late,
lost, ...); this module aggregates the pairs, compares them with what was written, and gives
each window and key its status. Nothing but the summary and the non-exact windows comes back
to the driver, so its memory does not grow with the range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial, reduce

from pyspark.sql import Column, DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from pyspark_kafka_upgrade._adapters.spark import parsing
from pyspark_kafka_upgrade._adapters.spark.aggregation import metric_function
from pyspark_kafka_upgrade._adapters.spark.window_pairs import (
    END,
    OWNER,
    START,
    STATE,
    US,
    Regrid,
    events_behind,
    owned_pairs,
)
from pyspark_kafka_upgrade._core.query.columns import (
    MALFORMED_REASON,
    WINDOW_END,
    WINDOW_START,
)
from pyspark_kafka_upgrade._core.query.recipe import Parsing
from pyspark_kafka_upgrade._core.query.window_sql import owned_by
from pyspark_kafka_upgrade._core.reconciliation.scope import GenerationScope
from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit
from pyspark_kafka_upgrade._domain.records.verification import (
    EventRef,
    PairState,
    Status,
    WindowFinding,
)
from pyspark_kafka_upgrade._domain.values.validation import MetricSpec, WindowSpec, parse_metric

_WRITES, _WRITERS, _STATUS = "_writes", "_writers", "_status"
_BACKFILL = "_backfill"  # the latest backfill that owns the window, if one does
_COUNTED, _LATE, _LOST, _UNKNOWN = "_n_counted", "_n_late", "_n_lost", "_n_unknown"
# Floating sums and averages merge partial sums in another order than one batch does.
_FLOAT_TOLERANCE = 1e-9
# Pairs dropped as the stream drops them: each makes its window "late by design".
_BY_DESIGN = (PairState.LATE.value, PairState.ARRIVED_AFTER.value, PairState.OUTSIDE.value)


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
    backfills: Sequence[BackfillCommit] = (),
    max_findings: int = 200,
    events_per_finding: int = 20,
) -> Reconciliation:
    """Reconcile ``written`` (the output, read back through ``Sink.read``) with ``raw`` (the
    records read back), window by window, for windows in [from_ms, to_ms).

    A window a backfill owns (``backfills``, oldest first; the latest that covers it) must
    hold the backfill's metrics over the events its owner counted or never read."""
    inputs = Observation("verify_inputs")
    parsed = parsing.parse_by(raw, parsing_rules).observe(
        inputs,
        F.count(F.lit(1)).alias("rows"),
        F.count(F.col(MALFORMED_REASON)).alias("malformed"),
    )
    keys = list(dict.fromkeys(key for scope in scopes for key in scope.keys))
    pairs = owned_pairs(
        spark,
        parsing.valid_events(parsed),
        scopes,
        keys,
        from_ms,
        to_ms,
        regrids=_regrids(backfills),
    )
    expected = _expected(pairs, scopes, keys, backfills)
    names = _metric_names(scopes, backfills)
    found = written_windows(written, scopes, keys, from_ms, to_ms, names=names)
    # Not cached: an Observation inside a cached plan reports nothing. Only a run with
    # findings reads the source a second time.
    floating = frozenset(field.name for field in parsing_rules.events if field.type == "double")
    classified = _classify(
        expected, found, scopes, keys, hidden_event_times, floating, backfills, names
    )
    if only is not None:
        # The windows these generations own, or wrote: a duplicate by another one shows.
        chosen = F.array(*(F.lit(g) for g in only))
        classified = classified.where(
            F.col(OWNER).isin(list(only)) | F.arrays_overlap(F.col(_WRITERS), chosen)
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
        .orderBy(START, *keys, OWNER)
        .limit(max_findings)
        .collect()
        if any(count for status, count in counts.items() if status not in quiet)
        else []
    )
    shown = sum(count for status, count in counts.items() if status not in quiet)
    behind = events_behind(spark, pairs, listed, keys, events_per_finding) if listed else {}
    findings = tuple(_finding(row, scopes, keys, behind, backfills) for row in listed)
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


# -- The expected side, aggregated: what each owner must have written ------------------------


def _expected(
    pairs: DataFrame,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    backfills: Sequence[BackfillCommit] = (),
) -> DataFrame:
    """Per owner, window and key: what its owner must have written, and its pairs' states."""
    state = F.col(STATE)
    counted = state == PairState.COUNTED.value
    maybe = counted | (state == PairState.UNKNOWN.value)
    aggregates = [
        F.count(F.when(counted, 1)).alias(_COUNTED),
        F.count(F.when(state.isin(*_BY_DESIGN), 1)).alias(_LATE),
        F.count(F.when(state == PairState.SKIPPED.value, 1)).alias(_LOST),
        F.count(F.when(state == PairState.UNKNOWN.value, 1)).alias(_UNKNOWN),
    ]
    for scope in scopes:
        mine = F.col(OWNER) == scope.generation
        for metric in scope.metrics:
            aggregates.append(metric_over(metric, mine & counted).alias(_exact(scope, metric)))
            aggregates.append(metric_over(metric, mine & maybe).alias(_maybe(scope, metric)))
    # A backfill counts what its owner never read too: the value the stream should have had.
    lost = state == PairState.SKIPPED.value
    for backfill in backfills:
        for metric in backfill_metrics(backfill):
            aggregates.append(metric_over(metric, counted | lost).alias(_b_exact(backfill, metric)))
            aggregates.append(metric_over(metric, maybe | lost).alias(_b_maybe(backfill, metric)))
    return pairs.groupBy(OWNER, START, END, *keys).agg(*aggregates)


def backfill_metrics(backfill: BackfillCommit) -> tuple[MetricSpec, ...]:
    return tuple(parse_metric(a.name, a.expression) for a in backfill.aggregates)


def _b_exact(backfill: BackfillCommit, metric: MetricSpec) -> str:
    return f"_be{backfill.backfill}_{metric.name}"


def _b_maybe(backfill: BackfillCommit, metric: MetricSpec) -> str:
    return f"_bu{backfill.backfill}_{metric.name}"


def metric_over(metric: MetricSpec, include: Column) -> Column:
    argument = F.lit(1) if metric.column == "*" else F.col(metric.column)
    return metric_function(metric.function)(F.when(include, argument))


def _exact(scope: GenerationScope, metric: MetricSpec) -> str:
    return f"_e{scope.generation}_{metric.name}"


def _maybe(scope: GenerationScope, metric: MetricSpec) -> str:
    return f"_u{scope.generation}_{metric.name}"


def written_name(name: str) -> str:
    return f"_w_{name}"


# -- The written side, and the comparison ---------------------------------------------------


def _metric_names(
    scopes: Sequence[GenerationScope], backfills: Sequence[BackfillCommit] = ()
) -> list[str]:
    names = [m.name for scope in scopes for m in scope.metrics]
    names += [aggregate.name for backfill in backfills for aggregate in backfill.aggregates]
    return list(dict.fromkeys(names))


def written_windows(
    written: DataFrame | None,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    from_ms: int,
    to_ms: int | None,
    *,
    names: Sequence[str] | None = None,
) -> DataFrame | None:
    """Per window and key: how many rows the generations wrote, by whom, with what values
    (of the metrics ``names``, by default every generation's).

    A row the running generation may have written after the facts were read (a window it
    owns, ending after the last watermark they know) is left out: on a live pipeline it is
    still open to them. Every other row counts, even one past its writer's watermark: a
    retired generation's facts are final, and no generation writes a window its own replay
    filter drops or one of another grid than its own (a copied file).
    """
    if written is None:
        return None
    start, end = F.unix_micros(F.col(WINDOW_START)), F.unix_micros(F.col(WINDOW_END))
    rows = written.where(start >= F.lit(from_ms * US))
    if to_ms is not None:
        rows = rows.where(end <= F.lit(to_ms * US))
    for scope in scopes:
        if scope.running and scope.written_through_ms is not None:
            kept = (F.col("generation") != scope.generation) | (
                end <= F.lit(scope.written_through_ms * US)
            )
            if scope.owns.window_end_after_ms is not None:
                kept = kept | (end <= F.lit(scope.owns.window_end_after_ms * US))
            if scope.owns.event_time_from_ms is not None:
                # Its windows hold events from E on, so each ends after E.
                kept = kept | (end <= F.lit(scope.owns.event_time_from_ms * US))
            # Nor does it write a window of another grid than its own.
            size, slide = scope.window.duration_ms * US, scope.window.slide_ms * US
            kept = kept | (end - start != F.lit(size)) | (F.pmod(start, F.lit(slide)) != 0)
            rows = rows.where(kept)
    present = set(written.columns)
    metric_names = _metric_names(scopes) if names is None else list(names)
    columns = [
        start.alias(START),
        end.alias(END),
        *(F.col(key) if key in present else F.lit(None).alias(key) for key in keys),
        F.col("generation"),
        *(
            (F.col(name) if name in present else F.lit(None)).alias(written_name(name))
            for name in metric_names
        ),
    ]
    return (
        rows.select(*columns)
        .groupBy(START, END, *keys)
        .agg(
            F.count(F.lit(1)).alias(_WRITES),
            F.array_sort(F.collect_list("generation")).alias(_WRITERS),
            *(F.first(written_name(name)).alias(written_name(name)) for name in metric_names),
        )
    )


def _classify(
    expected: DataFrame,
    written: DataFrame | None,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    hidden_event_times: Sequence[tuple[int, int]],
    floating: frozenset[str] = frozenset(),
    backfills: Sequence[BackfillCommit] = (),
    names: Sequence[str] | None = None,
) -> DataFrame:
    identity = [START, END, *keys]
    metric_names = _metric_names(scopes, backfills) if names is None else list(names)
    if written is None:
        joined = expected.select(
            "*",
            F.lit(0).cast(LongType()).alias(_WRITES),
            F.array().cast("array<int>").alias(_WRITERS),
            *(F.lit(None).alias(written_name(name)) for name in metric_names),
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
            *(F.col(f"w.{written_name(name)}") for name in metric_names),
        )
    return joined.withColumn(
        _STATUS, _status(scopes, hidden_event_times, floating, backfills)
    ).withColumn(_BACKFILL, _owning_backfill(backfills))


def _status(
    scopes: Sequence[GenerationScope],
    hidden_event_times: Sequence[tuple[int, int]],
    floating: frozenset[str],
    backfills: Sequence[BackfillCommit] = (),
) -> Column:
    owner, end, writes = F.col(OWNER), F.col(END), F.col(_WRITES)
    counted, late = F.coalesce(F.col(_COUNTED), F.lit(0)), F.coalesce(F.col(_LATE), F.lit(0))
    lost, unknown = F.coalesce(F.col(_LOST), F.lit(0)), F.coalesce(F.col(_UNKNOWN), F.lit(0))
    hidden = reduce(
        lambda any_, span: (
            any_ | ((F.col(START) <= F.lit(span[1] * US)) & (end > F.lit(span[0] * US)))
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
        beyond = F.lit(True) if through is None else end > F.lit(through * US)
        if scope.running:
            # Not written yet, whatever its events: never called lost. (A retired owner's
            # window past its last watermark is lost: nobody will write it.)
            still_open = still_open | (mine & beyond)
        exact = holds_values(scope.metrics, partial(_exact, scope), floating)
        maybe = holds_values(scope.metrics, partial(_maybe, scope), floating)
        matches = matches | (mine & exact)
        matches_maybe = matches_maybe | (mine & maybe)
    done = F.when(late > 0, Status.LATE.value).otherwise(Status.EXACT.value)
    chain = F.when(writes > 1, Status.WRITTEN_TWICE.value)
    # A window a backfill owns, judged by the latest backfill that owns it.
    for backfill in reversed(backfills):
        metrics = backfill_metrics(backfill)
        holds = holds_values(metrics, partial(_b_exact, backfill), floating)
        holds_maybe = holds_values(metrics, partial(_b_maybe, backfill), floating)
        chain = chain.when(
            _covered(backfill),
            F.when(
                owner.isNull(),
                F.when(hidden, Status.UNCLASSIFIED.value).otherwise(Status.DIFFERENT.value),
            )
            .when(
                writes == 0,
                F.when((counted + lost + unknown) == 0, Status.LATE.value)
                .when(hidden | (unknown > 0), Status.UNCLASSIFIED.value)
                .otherwise(Status.LOST.value),
            )
            .when(holds, done)
            .when((unknown > 0) & holds_maybe, done)
            .when(hidden | (unknown > 0), Status.UNCLASSIFIED.value)
            .otherwise(Status.DIFFERENT.value),
        )
    return (
        chain.when((writes == 0) & still_open, Status.OPEN.value)
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


def _covered(backfill: BackfillCommit) -> Column:
    """Whether the window is one ``backfill`` owns: of its grid, its end in its ranges."""
    return F.expr(owned_by(backfill, START, END))


def _regrids(backfills: Sequence[BackfillCommit]) -> list[Regrid]:
    """The windows backfills own, on their grids: each holds the events of every generation
    that read one, as the backfill counted them (after a window change, from before it)."""
    owning = _owning_backfill(backfills)
    queries: dict[tuple[WindowSpec, tuple[str, ...]], list[int]] = {}
    for backfill in backfills:
        queries.setdefault((backfill.window, backfill.grouping_keys), []).append(backfill.backfill)
    return [
        Regrid(window, keys, windows=owning.isin(numbers))
        for (window, keys), numbers in queries.items()
    ]


def _owning_backfill(backfills: Sequence[BackfillCommit]) -> Column:
    """The number of the latest backfill that owns the window; null when none does."""
    owning = F.lit(None).cast(LongType())
    for backfill in backfills:  # oldest first: a later one owns what it covers
        owning = F.when(_covered(backfill), F.lit(backfill.backfill)).otherwise(owning)
    return owning


def holds_values(
    metrics: Sequence[MetricSpec], expected: Callable[[MetricSpec], str], floating: frozenset[str]
) -> Column:
    """Whether the written row holds, for every one of ``metrics``, the value in its column
    ``expected(metric)``."""
    return reduce(
        lambda every, metric: (
            every
            & same_value(
                F.col(written_name(metric.name)), F.col(expected(metric)), metric, floating
            )
        ),
        metrics,
        F.lit(True),
    )


def same_value(
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


# -- The findings -----------------------------------------------------------------------------


def _finding(
    row: Row,
    scopes: Sequence[GenerationScope],
    keys: Sequence[str],
    behind: Mapping[tuple[object, ...], tuple[tuple[EventRef, ...], int]],
    backfills: Sequence[BackfillCommit] = (),
) -> WindowFinding:
    get = row.__getitem__
    owner = get(OWNER)
    scope = next((s for s in scopes if s.generation == owner), None)
    expected: dict[str, object] = {}
    if scope is not None:
        expected = {metric.name: get(_exact(scope, metric)) for metric in scope.metrics}
    names = [m.name for m in scope.metrics] if scope is not None else _metric_names(scopes)
    backfill = next((b for b in backfills if b.backfill == get(_BACKFILL)), None)
    if backfill is not None and scope is not None:
        # Judged by the backfill's query, over what its owner counted or never read.
        metrics = backfill_metrics(backfill)
        expected = {metric.name: get(_b_exact(backfill, metric)) for metric in metrics}
        names = [metric.name for metric in metrics]
    writes = int(get(_WRITES))
    written = {name: get(written_name(name)) for name in names} if writes else None
    identity = (owner, get(START), get(END), *(get(key) for key in keys))
    events, total = behind.get(identity, ((), 0))
    return WindowFinding(
        window_start_ms=int(get(START)) // US,
        window_end_ms=int(get(END)) // US,
        keys={key: get(key) for key in (scope.keys if scope is not None else keys)},
        status=Status(get(_STATUS)),
        owner=owner,
        writers=tuple(int(g) for g in get(_WRITERS)),
        expected=expected,
        written=written,
        events=events,
        more_events=max(0, total - len(events)),
    )
