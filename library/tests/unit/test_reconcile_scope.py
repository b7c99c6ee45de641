"""`verify`'s pure decisions: which batch read each offset and by which watermark it judged
lateness, which generation owns which windows, and which offsets to read back.

Every expected span, filter and offset below is worked out by hand from the facts the test
gives, with the reasoning in a comment; none is computed by the module under test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime

import pytest

import support.plans as plans
from pyspark_kafka_upgrade._core.reconciliation.scope import (
    GenerationScope,
    ReadPlan,
    Span,
    batch_spans,
    default_from_ms,
    generation_scopes,
    read_plan,
    unread_before,
)
from pyspark_kafka_upgrade._domain.records.history import BatchFacts, CheckpointBatch
from pyspark_kafka_upgrade._domain.records.ledger import GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from pyspark_kafka_upgrade._domain.records.signature import (
    Aggregate,
    Column,
    PipelineSignature,
    SourceSignature,
)
from pyspark_kafka_upgrade._domain.records.verification import (
    DeletedRange,
    GenerationFacts,
    VerifyFacts,
)
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.validation import MetricSpec, WindowSpec

T = "views"
P0: PartitionKey = (T, 0)
P1: PartitionKey = (T, 1)
MINUTE = 60_000
# Ten-minute tumbling windows, five minutes of watermark delay.
WINDOW = WindowSpec(duration_ms=10 * MINUTE, slide_ms=10 * MINUTE, watermark_delay_ms=5 * MINUTE)
# Ten-minute windows every five minutes, five minutes of delay.
SLIDING = WindowSpec(duration_ms=10 * MINUTE, slide_ms=5 * MINUTE, watermark_delay_ms=5 * MINUTE)


def utc(hour: int, minute: int = 0) -> int:
    """Milliseconds since the epoch of 2025-11-22 at ``hour:minute`` UTC."""
    return int(datetime(2025, 11, 22, hour, minute, tzinfo=UTC).timestamp() * 1000)


def signature(window: WindowSpec = WINDOW) -> PipelineSignature:
    return PipelineSignature(
        sources=(SourceSignature("kafka", "python", (T,)),),
        event_time_source="payload",
        event_time_field="event_time",
        window=window,
        grouping_keys=("article_id",),
        aggregates=(
            Aggregate("views", "count(*)"),
            Aggregate("readers", "approx_count_distinct(user_id)"),
        ),
        output_schema=(
            Column("article_id", "string"),
            Column("views", "bigint"),
            Column("readers", "bigint"),
        ),
        sink_format="parquet",
        sink_path="file:///data/output",
        output_mode="append",
        spark_version="4.2.0",
    )


def plan(
    from_generation: int,
    to_generation: int,
    *,
    restart: Mapping[PartitionKey, int],
    watermark_ms: int,
    replay_filter: ReplayFilter,
    window: WindowSpec = WINDOW,
) -> UpgradePlan:
    """The sample plan, restarting the partitions of ``restart`` where it says."""
    return dataclasses.replace(
        plans.sample_plan(),
        from_generation=from_generation,
        to_generation=to_generation,
        watermark_ms=watermark_ms,
        window=window,
        replay_filter=replay_filter,
        partitions=tuple(
            PartitionRestart(
                topic, number, offset, offset, None, RestartKind.FIRST_FEEDING_RECORD, "test"
            )
            for (topic, number), offset in sorted(restart.items())
        ),
    )


def batch(
    batch_id: int,
    end: Mapping[PartitionKey, int],
    watermark_ms: int,
    *,
    start: Mapping[PartitionKey, int] | None = None,
    run: str | None = "run-1",
    event_times: tuple[int, int] | None = None,
) -> BatchFacts:
    """A ledger batch; ``event_times`` None: it read no valid event."""
    low, high = event_times if event_times is not None else (None, None)
    return BatchFacts(batch_id, start, end, watermark_ms, low, high, run)


def generation(
    number: int = 1,
    *,
    ledger: tuple[BatchFacts, ...] = (),
    checkpoint: tuple[CheckpointBatch, ...] = (),
    upgrade: UpgradePlan | None = None,
    initial: Mapping[PartitionKey, int] | None = None,
    status: GenerationStatus = GenerationStatus.RUNNING,
    window: WindowSpec = WINDOW,
) -> GenerationFacts:
    return GenerationFacts(
        generation=number,
        status=status,
        signature=signature(window),
        plan=upgrade,
        ledger=ledger,
        checkpoint=checkpoint,
        initial_offsets=initial,
    )


def facts(*generations: GenerationFacts, earliest: Mapping[PartitionKey, int]) -> VerifyFacts:
    return VerifyFacts(pipeline="page-views", generations=generations, earliest=earliest)


# -- batch_spans ---------------------------------------------------------------------------------


def test_consecutive_batches_read_from_the_previous_end_judged_by_the_previous_watermark() -> None:
    # Batch 0 sees events up to 10:02, so batch 1 runs with 10:02 - 5 min = 9:57; batch 1
    # sees up to 10:05, so batch 2 runs with 10:00. All three are one run.
    first, second, third = (
        (utc(10, 0), utc(10, 2)),
        (utc(10, 2), utc(10, 5)),
        (utc(10, 5), utc(10, 9)),
    )
    ledger = (
        batch(0, {P0: 10, P1: 4}, 0, event_times=first),
        batch(1, {P0: 25, P1: 4}, utc(9, 57), start={P0: 10, P1: 4}, event_times=second),
        batch(2, {P0: 30, P1: 9}, utc(10, 0), start={P0: 25, P1: 4}, event_times=third),
    )

    spans = batch_spans(generation(ledger=ledger), {P0: 0, P1: 0})

    # Batch 0 starts at the broker's earliest offsets (no plan, no initial offsets) and judges
    # by its own watermark, 0. Each later batch reads [previous end, end) of each partition,
    # judged by the watermark of the batch before it; batch 1 read nothing of partition 1.
    assert spans == (
        Span(T, 0, 0, 10, 0, 0, 0, *first, True),
        Span(T, 1, 0, 4, 0, 0, 0, *first, True),
        Span(T, 0, 10, 25, 1, 0, 0, *second, True),
        Span(T, 0, 25, 30, 2, utc(9, 57), utc(9, 57), *third, True),
        Span(T, 1, 4, 9, 2, utc(9, 57), utc(9, 57), *third, True),
    )


def test_batch_zero_judges_lateness_by_its_own_watermark() -> None:
    # No batch ran before batch 0: its bound is the watermark it ran with, here 9:00.
    ledger = (batch(0, {P0: 10}, utc(9, 0), event_times=(utc(9, 5), utc(9, 8))),)

    [span] = batch_spans(generation(ledger=ledger), {P0: 0})

    assert (span.batch_id, span.late_through_ms, span.on_time_after_ms) == (0, utc(9, 0), utc(9, 0))


def test_a_batch_that_begins_a_run_leaves_an_uncertain_band_up_to_its_own_watermark() -> None:
    w1, w2, w3, w4, w5 = utc(9, 57), utc(10, 0), utc(10, 3), utc(10, 6), utc(10, 9)
    ledger = (
        batch(0, {P0: 10}, 0, run="a"),
        batch(1, {P0: 20}, w1, start={P0: 10}, run="a"),
        batch(2, {P0: 30}, w2, start={P0: 20}, run="b"),  # a restart: a new run id
        batch(3, {P0: 40}, w3, start={P0: 30}, run="b"),
        batch(4, {P0: 50}, w4, start={P0: 40}, run=None),  # nobody said which run
        batch(5, {P0: 60}, w5, start={P0: 50}, run=None),  # nor here: not known to be one run
    )

    spans = batch_spans(generation(ledger=ledger), {P0: 0})

    bounds = [(s.batch_id, s.start, s.end, s.late_through_ms, s.on_time_after_ms) for s in spans]
    assert bounds == [
        (0, 0, 10, 0, 0),
        # Same run as batch 0: late through batch 0's watermark, counted after it, no band.
        (1, 10, 20, 0, 0),
        # Begins run b: it may have judged by its own watermark, so (w1, w2] is uncertain.
        (2, 20, 30, w1, w2),
        # Same run as batch 2: the previous watermark decides exactly.
        (3, 30, 40, w2, w2),
        # No run id: it may have begun a run.
        (4, 40, 50, w3, w4),
        (5, 50, 60, w4, w5),
    ]


@pytest.mark.parametrize(
    ("restart", "initial", "expected"),
    [
        pytest.param({P0: 20}, {P0: 15}, 20, id="the plan's restart offset"),
        pytest.param(None, {P0: 15}, 15, id="no plan: the stored initial offset"),
        pytest.param(None, None, 7, id="neither: the broker's earliest offset"),
        pytest.param({P0: -2}, None, 7, id="-2 in the plan: the earliest offset"),
    ],
)
def test_the_first_batch_starts_where_the_generation_started(
    restart: Mapping[PartitionKey, int] | None,
    initial: Mapping[PartitionKey, int] | None,
    expected: int,
) -> None:
    upgrade = (
        None
        if restart is None
        else plan(
            1, 2, restart=restart, watermark_ms=utc(9, 0), replay_filter=ReplayFilter(utc(9, 0))
        )
    )
    ledger = (batch(0, {P0: 50}, 0),)
    made = generation(2, ledger=ledger, upgrade=upgrade, initial=initial)

    [span] = batch_spans(made, {P0: 7})

    assert (span.start, span.end, span.batch_id) == (expected, 50, 0)


def test_a_partition_planned_at_latest_starts_where_the_initial_offsets_say() -> None:
    # A newly subscribed topic started at latest (-1): the source resolved that to 40 when the
    # query started and stored it. Offsets 7..39 were never read by this generation.
    upgrade = plan(1, 2, restart={P0: -1}, watermark_ms=utc(9, 0), replay_filter=ReplayFilter())
    made = generation(2, ledger=(batch(0, {P0: 50}, 0),), upgrade=upgrade, initial={P0: 40})

    [span] = batch_spans(made, {P0: 7})

    assert (span.start, span.end) == (40, 50)


def test_a_partition_added_while_the_query_runs_is_read_from_its_earliest_offset() -> None:
    # Partition 1 appears in batch 1's end offsets: Spark (and ranges.plan_ranges for the
    # pykafka source) reads an added partition from its earliest offset, here 0, to 30.
    ledger = (
        batch(0, {P0: 10}, 0),
        batch(1, {P0: 20, P1: 30}, utc(9, 57), start={P0: 10}),
    )

    spans = batch_spans(generation(ledger=ledger), {P0: 0, P1: 0})

    assert [(s.partition, s.start, s.end, s.batch_id) for s in spans if s.partition == 1] == [
        (1, 0, 30, 1)
    ]


def test_a_missing_batch_is_a_gap_between_its_neighbours() -> None:
    # Batches 2 and 3 are in neither the ledger nor the checkpoint: what they read,
    # [batch 1's end, batch 4's start), is a gap, judged somewhere between batch 1's
    # watermark and batch 4's.
    w1, w4, w5 = utc(9, 57), utc(10, 12), utc(10, 14)
    ledger = (
        batch(0, {P0: 10}, 0),
        batch(1, {P0: 20}, w1, start={P0: 10}),
        batch(4, {P0: 50}, w4, start={P0: 40}),
        batch(5, {P0: 55}, w5, start={P0: 50}),
    )

    spans = batch_spans(generation(ledger=ledger), {P0: 0})

    bounds = [(s.batch_id, s.start, s.end, s.late_through_ms, s.on_time_after_ms) for s in spans]
    assert bounds == [
        (0, 0, 10, 0, 0),
        (1, 10, 20, 0, 0),
        (None, 20, 40, w1, w4),
        # Batch 3's watermark, which batch 4 judged by, is unknown: at least w1, at most w4.
        (4, 40, 50, w1, w4),
        # Consecutive again, same run: exact.
        (5, 50, 55, w4, w4),
    ]


def test_the_checkpoint_fills_in_a_batch_the_ledger_lacks() -> None:
    w1, w2 = utc(9, 57), utc(10, 0)
    ledger = (
        batch(0, {P0: 10}, 0, run="a", event_times=(utc(10, 0), utc(10, 2))),
        batch(2, {P0: 30}, w2, start={P0: 20}, run="a", event_times=(utc(10, 5), utc(10, 9))),
    )
    checkpoint = (
        CheckpointBatch(1, {P0: 20}, w1),
        CheckpointBatch(2, {P0: 30}, w2),  # agrees with the ledger: the ledger's facts stay
    )

    spans = batch_spans(generation(ledger=ledger, checkpoint=checkpoint), {P0: 0})

    assert spans == (
        Span(T, 0, 0, 10, 0, 0, 0, utc(10, 0), utc(10, 2), True),
        # No gap: batch 1 is the checkpoint's. Its run is unknown, so it may have begun one;
        # the ledger did not record its event times.
        Span(T, 0, 10, 20, 1, 0, w1, None, None, False),
        # Batch 2's run "a" is not known to be batch 1's: uncertain up to its own watermark.
        Span(T, 0, 20, 30, 2, w1, w2, utc(10, 5), utc(10, 9), True),
    )


@pytest.mark.parametrize(
    ("end", "watermark"),
    [
        pytest.param(18, utc(9, 58), id="other end offsets and watermark"),
        pytest.param(20, utc(9, 58), id="another watermark"),
        pytest.param(18, utc(9, 57), id="other end offsets"),
    ],
)
def test_the_checkpoint_wins_where_it_disagrees_with_the_ledger(end: int, watermark: int) -> None:
    ledger = (
        batch(0, {P0: 10}, 0),
        batch(1, {P0: 20}, utc(9, 57), start={P0: 10}, event_times=(utc(10, 2), utc(10, 5))),
        batch(2, {P0: 30}, utc(10, 3), start={P0: 20}),
    )
    checkpoint = (CheckpointBatch(1, {P0: end}, watermark),)

    spans = batch_spans(generation(ledger=ledger, checkpoint=checkpoint), {P0: 0})

    # The checkpoint decides what committed: batch 1 ends at its offset and ran with its
    # watermark; the ledger's event times and run id for batch 1 are not trusted.
    assert spans == (
        Span(T, 0, 0, 10, 0, 0, 0, None, None, True),
        Span(T, 0, 10, end, 1, 0, watermark, None, None, False),
        Span(T, 0, end, 30, 2, watermark, utc(10, 3), None, None, True),
    )


# -- generation_scopes ---------------------------------------------------------------------------


def test_each_generation_owns_what_its_plan_keeps_until_its_successor_takes_over() -> None:
    split = utc(10, 24)
    first = generation(
        1,
        status=GenerationStatus.RETIRED,
        ledger=(batch(0, {P0: 10}, 0), batch(1, {P0: 40}, utc(10, 19), start={P0: 10})),
        # Batch 2 is only in the checkpoint, and has the highest watermark.
        checkpoint=(CheckpointBatch(1, {P0: 40}, utc(10, 19)), CheckpointBatch(2, {P0: 45}, split)),
    )
    rolled_back = generation(
        2,
        status=GenerationStatus.RETIRED,
        upgrade=plan(
            1,
            2,
            restart={P0: 30},
            watermark_ms=utc(10, 19),
            replay_filter=ReplayFilter(window_end_after_ms=utc(10, 19)),
        ),
    )
    third_filter = ReplayFilter(window_end_after_ms=split)
    third = generation(
        3,
        upgrade=plan(1, 3, restart={P0: 20}, watermark_ms=split, replay_filter=third_filter),
        ledger=(batch(0, {P0: 60}, 0),),
    )

    scopes = generation_scopes(facts(first, rolled_back, third, earliest={P0: 0}))

    # Generation 2 was rolled back before a batch: it takes no part.
    assert [scope.generation for scope in scopes] == [1, 3]
    old, new = scopes
    # The first generation keeps everything; generation 3 takes over what its plan keeps.
    assert (old.owns, old.next_owns, old.running) == (ReplayFilter(), third_filter, False)
    assert (new.owns, new.next_owns, new.running) == (third_filter, None, True)
    # The highest watermark known, from the ledger or the checkpoint.
    assert old.written_through_ms == split
    assert new.written_through_ms == 0
    assert old.window == WINDOW
    assert old.keys == ("article_id",)
    assert old.metrics == (
        MetricSpec("views", "count", "*"),
        MetricSpec("readers", "approx_count_distinct", "user_id"),
    )
    # Generation 1 read 0..44; generation 3 restarted at 20 and read to 59.
    assert (old.first_offsets, old.last_offsets) == ({P0: 0}, {P0: 45})
    assert (new.first_offsets, new.last_offsets) == ({P0: 20}, {P0: 60})


@pytest.mark.parametrize(
    ("new_window", "expected"),
    [
        # Same window: the windows ending at or before the old watermark, 10:24, were written.
        pytest.param(WINDOW, ReplayFilter(window_end_after_ms=utc(10, 24)), id="same window"),
        # A new window: split in event time at the end of the last written window, the
        # largest tumbling-window end at or before 10:24, which is 10:20.
        pytest.param(SLIDING, ReplayFilter(event_time_from_ms=utc(10, 20)), id="another window"),
    ],
)
def test_a_generation_started_without_a_plan_splits_at_the_old_watermark(
    new_window: WindowSpec, expected: ReplayFilter
) -> None:
    old = generation(
        1,
        status=GenerationStatus.RETIRED,
        ledger=(batch(0, {P0: 10}, 0), batch(1, {P0: 40}, utc(10, 24), start={P0: 10})),
    )
    new = generation(2, ledger=(batch(0, {P0: 60}, 0),), initial={P0: 40}, window=new_window)

    scopes = generation_scopes(facts(old, new, earliest={P0: 0}))

    assert [scope.owns for scope in scopes] == [ReplayFilter(), expected]
    assert scopes[0].next_owns == expected


def test_a_partition_that_never_moved_still_has_bounds_so_a_later_record_arrived_after() -> None:
    # Partition 1 sat at offset 0 for all of generation 1: no span, but its bounds are 0..0,
    # so a record that lands there after generation 1 stopped is "arrived after", not
    # "never read".
    old = generation(
        1,
        status=GenerationStatus.RETIRED,
        ledger=(
            batch(0, {P0: 10, P1: 0}, 0),
            batch(1, {P0: 20, P1: 0}, utc(9, 57), start={P0: 10, P1: 0}),
        ),
    )

    [scope] = generation_scopes(facts(old, earliest={P0: 0, P1: 0}))

    assert all(span.partition == 0 for span in scope.spans)
    assert (scope.first_offsets[P1], scope.last_offsets[P1]) == (0, 0)
    assert (scope.first_offsets[P0], scope.last_offsets[P0]) == (0, 20)


P2: PartitionKey = (T, 2)
OTHER: PartitionKey = ("clicks", 0)


def test_a_partition_added_after_a_generation_stopped_is_outside_it_not_lost() -> None:
    # Generation 1 read partitions 0 and 1 and stopped; partition 2 appeared afterwards (no
    # batch of generation 1 has it). Generation 2 read all three. Records of partition 2 in
    # generation 1's windows are by design nobody's; generation 2 had partition 2.
    old = generation(
        1,
        status=GenerationStatus.RETIRED,
        ledger=(batch(0, {P0: 10, P1: 10}, 0), batch(1, {P0: 20, P1: 20}, utc(10, 4))),
    )
    new = generation(
        2,
        ledger=(batch(0, {P0: 30, P1: 30, P2: 5}, 0),),
        upgrade=plan(
            1,
            2,
            restart={P0: 15, P1: 15, P2: -2},
            watermark_ms=utc(10, 4),
            replay_filter=ReplayFilter(window_end_after_ms=utc(10, 4)),
        ),
    )

    first, second = generation_scopes(facts(old, new, earliest={P0: 0, P1: 0, P2: 0}))

    assert first.outside(P2) and not first.outside(P0) and not first.outside(P1)
    assert not second.outside(P2)


def test_a_running_generation_missing_a_partition_of_its_topic_lost_it() -> None:
    # Partition 2 was read by generation 1 but no batch of the running generation 2 has it:
    # its source reads every partition of its topic, so this is a loss, not a design.
    old = generation(
        1,
        status=GenerationStatus.RETIRED,
        ledger=(batch(0, {P0: 10, P2: 10}, 0), batch(1, {P0: 20, P2: 20}, utc(10, 4))),
    )
    new = generation(2, ledger=(batch(0, {P0: 30}, 0),), initial={P0: 15})

    _, running = generation_scopes(facts(old, new, earliest={P0: 0, P2: 0}))

    assert running.running and not running.outside(P2)


def test_a_topic_a_generation_did_not_subscribe_to_is_outside_it_even_while_running() -> None:
    [scope] = generation_scopes(facts(generation(1, ledger=(batch(0, {P0: 10}, 0),)), earliest={}))

    assert scope.topics == (T,)
    assert scope.outside(OTHER) and not scope.outside(P0) and not scope.outside(P2)


# -- read_plan -----------------------------------------------------------------------------------


def read(partition: int, start: int, end: int, low: int, high: int, batch_id: int = 0) -> Span:
    """A span whose batch the ledger says read valid events from ``low`` to ``high``."""
    return Span(T, partition, start, end, batch_id, 0, 0, low, high, True)


def no_event(partition: int, start: int, end: int, batch_id: int = 0) -> Span:
    """A span whose batch the ledger says read no valid event."""
    return Span(T, partition, start, end, batch_id, 0, 0, None, None, True)


def unknown(partition: int, start: int, end: int, batch_id: int | None = None) -> Span:
    """A span whose batch's event times the ledger does not know (checkpoint, or a gap)."""
    return Span(T, partition, start, end, batch_id, 0, 0, None, None, False)


def scope_of(number: int, *spans: Span) -> GenerationScope:
    return GenerationScope(
        generation=number,
        window=WINDOW,
        topics=(T,),
        keys=("article_id",),
        metrics=(),
        owns=ReplayFilter(),
        next_owns=None,
        written_through_ms=None,
        running=True,
        spans=spans,
        first_offsets={},
        last_offsets={},
    )


@pytest.mark.parametrize(
    ("from_ms", "start"),
    [
        # The first batch's events, 9:40 to 9:45, are all before 9:50: it is not read again.
        pytest.param(utc(9, 50), 10, id="a batch wholly before the range"),
        # An event at 9:45 may be in a window starting at 9:45: read from the first batch on.
        pytest.param(utc(9, 45), 0, id="its last event at the range's start"),
    ],
)
def test_batches_wholly_before_the_range_are_not_read(from_ms: int, start: int) -> None:
    scope = scope_of(
        1,
        read(0, 0, 10, utc(9, 40), utc(9, 45)),
        read(0, 10, 20, utc(9, 48), utc(10, 5), batch_id=1),
        unknown(0, 20, 30, batch_id=2),
        # Partition 1's only batch is before both ranges: nothing of it is read.
        read(1, 0, 5, utc(9, 40), utc(9, 44)),
    )

    planned = read_plan([scope], {P0: 0, P1: 0}, from_ms=from_ms, to_ms=None)

    assert planned == ReadPlan(start={P0: start}, end={P0: 30}, deleted=(), hidden_event_times=())


def test_a_batch_whose_event_times_are_unknown_is_read() -> None:
    scope = scope_of(1, unknown(0, 0, 10, batch_id=0), read(0, 10, 20, utc(9, 0), utc(9, 5), 1))

    planned = read_plan([scope], {P0: 0}, from_ms=utc(10, 0), to_ms=None)

    # The unknown batch may hold an event of the range; the known one lies wholly before it,
    # so the read ends where the unknown one does.
    assert (planned.start, planned.end) == ({P0: 0}, {P0: 10})


def test_a_batch_without_a_valid_event_is_not_read() -> None:
    scope = scope_of(
        1,
        no_event(0, 0, 10),
        read(0, 10, 20, utc(10, 0), utc(10, 5), batch_id=1),
        no_event(1, 0, 8),  # partition 1 held only malformed records
    )

    planned = read_plan([scope], {P0: 0, P1: 0}, from_ms=0, to_ms=None)

    assert (planned.start, planned.end) == ({P0: 10}, {P0: 20})


def test_the_read_ends_where_the_last_batch_that_may_hold_the_range_ends() -> None:
    # Generation 1 read 0..39, all before the range; generation 2 restarted at 20 and read
    # 20..34, in the range. Offsets 35..39 hold only generation 1's events, before the
    # range: the read is 20..34, not up to where anybody read.
    old = scope_of(1, read(0, 0, 40, utc(9, 0), utc(9, 30)))
    new = scope_of(2, read(0, 20, 35, utc(9, 55), utc(10, 10)))

    planned = read_plan([old, new], {P0: 0}, from_ms=utc(9, 50), to_ms=None)

    assert (planned.start, planned.end) == ({P0: 20}, {P0: 35})


def test_a_batch_wholly_after_the_range_is_not_read() -> None:
    scope = scope_of(
        1,
        read(0, 0, 10, utc(11, 0), utc(11, 5)),  # its first event is at the range's end
        read(0, 10, 20, utc(9, 55), utc(10, 5), batch_id=1),
    )

    planned = read_plan([scope], {P0: 0}, from_ms=utc(9, 0), to_ms=utc(11, 0))

    assert (planned.start, planned.end) == ({P0: 10}, {P0: 20})


def test_offsets_retention_deleted_are_reported_and_hide_their_batches_event_times() -> None:
    scope = scope_of(
        1,
        read(0, 0, 10, utc(9, 40), utc(9, 45)),
        no_event(0, 10, 20, batch_id=1),
        read(0, 20, 30, utc(9, 52), utc(10, 0), batch_id=2),
        read(0, 30, 40, utc(10, 0), utc(10, 8), batch_id=3),
        read(1, 0, 8, utc(9, 30), utc(9, 35)),
    )
    # The brokers now start partition 0 at 25; partition 1 is whole.
    earliest = {P0: 25, P1: 0}

    planned = read_plan([scope], earliest, from_ms=0, to_ms=None)

    assert planned.deleted == (DeletedRange(T, 0, 0, 25),)
    assert (planned.start, planned.end) == ({P0: 25, P1: 0}, {P0: 40, P1: 8})
    # Batches 0 and 2 read deleted offsets; batch 1 read no valid event, so it hides
    # nothing; batch 3 read none of the deleted offsets.
    assert planned.hidden_event_times == ((utc(9, 40), utc(9, 45)), (utc(9, 52), utc(10, 0)))


def test_deleted_offsets_of_a_batch_with_unknown_event_times_hide_all_of_time() -> None:
    scope = scope_of(1, unknown(1, 0, 8), unknown(1, 8, 12))

    planned = read_plan([scope], {P1: 3}, from_ms=0, to_ms=None)

    assert planned.deleted == (DeletedRange(T, 1, 0, 3),)
    assert (planned.start, planned.end) == ({P1: 3}, {P1: 12})
    # Only the first batch read offsets 0..2; its events may be at any time.
    [(low, high)] = planned.hidden_event_times
    assert low == 0
    assert high >= int(datetime(3000, 1, 1, tzinfo=UTC).timestamp() * 1000)


def test_offsets_all_deleted_leave_nothing_to_read_there() -> None:
    scope = scope_of(1, read(0, 0, 10, utc(9, 40), utc(9, 45)))

    planned = read_plan([scope], {P0: 14}, from_ms=0, to_ms=None)

    # The broker's earliest, 14, is past what the pipeline read: 0..9 are all gone.
    assert planned.deleted == (DeletedRange(T, 0, 0, 10),)
    assert (planned.start, planned.end) == ({P0: 10}, {P0: 10})
    assert planned.hidden_event_times == ((utc(9, 40), utc(9, 45)),)


# -- default_from_ms -----------------------------------------------------------------------------


def test_the_default_range_starts_two_windows_and_delays_before_the_last_plans_watermark() -> None:
    older = plan(1, 2, restart={P0: 10}, watermark_ms=utc(9, 0), replay_filter=ReplayFilter())
    last = plan(
        2,
        3,
        restart={P0: 30},
        watermark_ms=utc(10, 27),
        replay_filter=ReplayFilter(window_end_after_ms=utc(10, 27)),
        window=SLIDING,
    )
    gathered = facts(
        generation(1, status=GenerationStatus.RETIRED, ledger=(batch(0, {P0: 10}, 0),)),
        generation(
            2, status=GenerationStatus.RETIRED, upgrade=older, ledger=(batch(0, {P0: 30}, 0),)
        ),
        generation(3, upgrade=last, ledger=(batch(0, {P0: 50}, 0),), window=SLIDING),
        earliest={P0: 0},
    )

    # 2 x (10 min window + 5 min delay) = 30 min before 10:27 is 9:57, floored to the
    # five-minute slide of the last plan's window: 9:55 (the older plan does not count).
    assert default_from_ms(generation_scopes(gathered), gathered) == utc(9, 55)


def test_without_a_plan_the_default_range_ends_at_the_running_watermark() -> None:
    only = generation(
        1,
        window=SLIDING,
        ledger=(batch(0, {P0: 10}, 0), batch(1, {P0: 20}, utc(10, 31), start={P0: 10})),
    )
    gathered = facts(only, earliest={P0: 0})

    # 30 minutes before 10:31 is 10:01, floored to the five-minute slide: 10:00.
    assert default_from_ms(generation_scopes(gathered), gathered) == utc(10, 0)


def test_the_default_range_never_starts_before_the_epoch() -> None:
    gathered = facts(generation(1), earliest={})  # no batch yet: watermark 0

    assert default_from_ms(generation_scopes(gathered), gathered) == 0


def test_offsets_before_the_first_known_batch_are_a_gap_not_never_read() -> None:
    # The ledger lost batches 0 and 1 and the checkpoint no longer keeps them; batch 2 read
    # 20..30. The generation began at its initial offset 0, so 0..20 were read by batches
    # nobody recorded: unknown, between no watermark (0) and batch 2's.
    w2 = utc(9, 57)
    made = generation(ledger=(batch(2, {P0: 30}, w2, start={P0: 20}),), initial={P0: 0})

    spans = batch_spans(made, {P0: 0})

    assert [(s.batch_id, s.start, s.end, s.late_through_ms, s.on_time_after_ms) for s in spans] == [
        (None, 0, 20, 0, w2),
        (2, 20, 30, 0, w2),
    ]


# -- Offsets no generation read, between one and the next ---------------------------------------


def upgraded_pair(restart: Mapping[PartitionKey, int]) -> VerifyFacts:
    """Generation 1 read partition 0 to 20 (W = 10:04) and stopped; partition 2 appeared;
    generation 2 started where ``restart`` says and read both to 30 and 12."""
    old = generation(
        1,
        status=GenerationStatus.RETIRED,
        ledger=(
            batch(0, {P0: 10}, 0, event_times=(utc(10, 0), utc(10, 5))),
            batch(1, {P0: 20}, utc(10, 4), start={P0: 10}, event_times=(utc(10, 6), utc(10, 9))),
        ),
    )
    new = generation(
        2,
        ledger=(batch(0, {P0: 30, P2: 12}, 0, event_times=(utc(10, 5), utc(10, 20))),),
        upgrade=plan(
            1,
            2,
            restart=restart,
            watermark_ms=utc(10, 4),
            replay_filter=ReplayFilter(window_end_after_ms=utc(10, 4)),
        ),
    )
    return facts(old, new, earliest={P0: 0, P2: 0})


@pytest.mark.parametrize(
    ("restart", "start"),
    [
        # The range starts at 10:10: generation 1's batches (events to 10:09) are not read.
        # As planned, partition 0 replays from 15 and partition 2 from its earliest.
        pytest.param({P0: 15, P2: -2}, {P0: 15, P2: 0}, id="as planned"),
        # Partition 2 started at 5, past its earliest: offsets 0..4 were read by nobody and
        # are read back, so that their events of generation 2's windows show as lost.
        pytest.param({P0: 15, P2: 5}, {P0: 15, P2: 0}, id="new past earliest"),
        # Partition 0 restarted at 25, past generation 1's end (20): 20..24 are read back.
        pytest.param({P0: 25, P2: -2}, {P0: 20, P2: 0}, id="past the old end"),
    ],
)
def test_offsets_no_generation_read_between_two_are_read_back(
    restart: Mapping[PartitionKey, int], start: Mapping[PartitionKey, int]
) -> None:
    scopes = generation_scopes(upgraded_pair(restart))

    planned = read_plan(scopes, {P0: 0, P2: 0}, from_ms=utc(10, 10), to_ms=None)

    assert (planned.start, planned.end) == (start, {P0: 30, P2: 12})


def test_the_unread_offsets_are_where_one_generation_ended_and_the_next_began() -> None:
    first, second = generation_scopes(upgraded_pair({P0: 25, P2: 5}))

    # Partition 0: from generation 1's end, 20; partition 2, which it never had: from 0.
    assert unread_before(first, second, {P0: 0, P2: 0}) == {P0: 20, P2: 0}
    # As planned, nothing lies between them.
    planned_first, planned_second = generation_scopes(upgraded_pair({P0: 15, P2: -2}))
    assert unread_before(planned_first, planned_second, {P0: 0, P2: 0}) == {}


def test_a_partition_a_plan_started_at_latest_on_purpose_is_not_read_back_before_it() -> None:
    # The plan started the new partition at latest (-1), as the settings asked for a newly
    # subscribed topic: what came before it is nobody's, not lost.
    facts_ = upgraded_pair({P0: 15, P2: -1})
    first, second = generation_scopes(facts_)

    assert second.started_at_latest == {P2}
    assert unread_before(first, second, {P0: 0, P2: 0}) == {}


def test_a_retired_generation_whose_last_batches_are_unknown_ends_where_its_successor_planned() -> (
    None
):
    # Generation 1's ledger lost its last batch (to 20, W = 10:04) and its checkpoint is gone;
    # the plan that retired it saw that batch: it stopped at 20, and partition 2 (first read
    # in that batch) was its, though nothing else says so.
    old = generation(
        1,
        status=GenerationStatus.RETIRED,
        ledger=(batch(0, {P0: 10}, 0, event_times=(utc(10, 0), utc(10, 5))),),
    )
    retiring = plan(
        1,
        2,
        restart={P0: 15, P2: 3},
        watermark_ms=utc(10, 4),
        replay_filter=ReplayFilter(window_end_after_ms=utc(10, 4)),
    )
    retiring = dataclasses.replace(
        retiring,
        partitions=tuple(
            dataclasses.replace(p, old_end_offset={P0: 20, P2: 5}[p.key])
            for p in retiring.partitions
        ),
    )
    new = generation(2, ledger=(batch(0, {P0: 30, P2: 12}, 0),), upgrade=retiring)

    first, second = generation_scopes(facts(old, new, earliest={P0: 0, P2: 0}))

    assert first.written_through_ms == utc(10, 4)
    assert (first.last_offsets[P0], first.last_offsets[P2]) == (20, 5)
    assert P2 not in first.first_offsets and not first.outside(P2)
    # Nothing lies between where generation 1 stopped and generation 2 began.
    assert unread_before(first, second, {P0: 0, P2: 0}) == {}
