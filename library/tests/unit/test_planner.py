"""The upgrade planner's arithmetic, reasons and refusals, on small hand-made histories."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

import pytest

from pyspark_kafka_upgrade._core.planner.late_records import (
    LateRecords,
    count_late_records,
)
from pyspark_kafka_upgrade._core.planner.restart import plan_restart
from pyspark_kafka_upgrade._core.planner.retention import (
    OffsetsOutOfRetentionError,
    check_retention,
)
from pyspark_kafka_upgrade._core.planner.tightening import tighten
from pyspark_kafka_upgrade._domain.errors import (
    PipelineError,
)
from pyspark_kafka_upgrade._domain.records.history import (
    EARLIEST,
    BatchFacts,
    CheckpointBatch,
    CheckpointFacts,
    flat_offsets,
)
from pyspark_kafka_upgrade._domain.records.record_errors import (
    InconsistentInputsError,
    LedgerAheadError,
    NoCommittedBatchError,
    PlanningError,
    UnknownWatermarkError,
)
from pyspark_kafka_upgrade._domain.records.replay_filter import (
    late_event_threshold_ms,
    replay_filter_bounds,
)
from pyspark_kafka_upgrade._domain.records.restart import RestartPlan
from pyspark_kafka_upgrade._domain.records.scans import Scan
from pyspark_kafka_upgrade._domain.values.offsets import (
    InvalidOffsetsError,
    PartitionKey,
)
from pyspark_kafka_upgrade._domain.values.validation import (
    InvalidValueError,
    WindowSpec,
)
from pyspark_kafka_upgrade._domain.values.windows import (
    earliest_open_event_ms,
)

TOPIC = "views"
MINUTE = 60_000
# 2024-05-01T10:00:00Z: reasons print times, which reads better with a real date.
TEN = int(datetime(2024, 5, 1, 10, tzinfo=UTC).timestamp() * 1000)
TUMBLING = WindowSpec(duration_ms=10 * MINUTE, slide_ms=10 * MINUTE, watermark_delay_ms=2 * MINUTE)


def at(minutes: float) -> int:
    """TEN plus some minutes, in ms."""
    return TEN + round(minutes * MINUTE)


def offsets(*values: int, topic: str = TOPIC) -> dict[PartitionKey, int]:
    return {(topic, partition): value for partition, value in enumerate(values)}


def batch(
    batch_id: int,
    start: Mapping[PartitionKey, int] | None,
    end: Mapping[PartitionKey, int],
    watermark_ms: int,
    times: tuple[int, int] | None,
) -> BatchFacts:
    return BatchFacts(
        batch_id=batch_id,
        start_offsets=None if start is None else dict(start),
        end_offsets=dict(end),
        watermark_ms=watermark_ms,
        min_event_time_ms=None if times is None else times[0],
        max_event_time_ms=None if times is None else times[1],
    )


def chain(*rows: tuple[int, tuple[int, ...], int, tuple[int, int] | None]) -> list[BatchFacts]:
    """Ledger facts of consecutive batches from (batch id, end offsets, watermark, times)."""
    facts: list[BatchFacts] = []
    previous: dict[PartitionKey, int] | None = None
    for batch_id, ends, watermark_ms, times in rows:
        end = offsets(*ends)
        facts.append(batch(batch_id, previous, end, watermark_ms, times))
        previous = end
    return facts


def checkpoint_of(
    facts: list[BatchFacts], *, keep: int | None = None, next_watermark_ms: int | None = None
) -> CheckpointFacts:
    """The checkpoint those batches left, retaining the last ``keep`` offsets files."""
    kept = facts if keep is None else facts[-keep:]
    return CheckpointFacts(
        last_committed_batch=facts[-1].batch_id,
        batches=tuple(CheckpointBatch(f.batch_id, f.end_offsets, f.watermark_ms) for f in kept),
        next_watermark_ms=next_watermark_ms,
    )


# A history with W = 10:30: batch 2 is the first with an event at or after T_min = 10:30.
HISTORY = chain(
    (0, (100, 50), 0, (at(0), at(12))),
    (1, (200, 90), at(10), (at(12), at(29.5))),
    (2, (300, 140), at(27.5), (at(29), at(31 + 1 / 3))),
    (3, (350, 160), at(29.3), (at(30), at(32.5))),
    (4, (360, 170), at(30), (at(31), at(32))),
)


def plan_of(
    facts: list[BatchFacts],
    *,
    window: WindowSpec = TUMBLING,
    gaps: tuple[int, ...] = (),
    checkpoint: CheckpointFacts | None = None,
    initial: Mapping[PartitionKey, int] | None = None,
    written_through: int | None = None,
) -> RestartPlan:
    return plan_restart(
        window=window,
        checkpoint=checkpoint or checkpoint_of(facts),
        ledger=facts,
        gap_batch_ids=gaps,
        initial_offsets=offsets(0, 0) if initial is None else initial,
        written_through_ms=written_through,
    )


# -- T_min ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("watermark", "size", "slide", "expected"),
    [
        (35, 10, 10, 30),  # inside a window: that window is open
        (30, 10, 10, 30),  # W exactly on a window end: the window ending at W is written
        (29, 10, 10, 20),
        (0, 10, 10, 0),
        (30, 10, 5, 25),  # sliding: [25, 35) is the earliest window still open
        (32, 10, 5, 25),
        (34, 10, 5, 25),
        (35, 10, 5, 30),
        (30, 10, 4, 24),  # a slide that does not divide the window
        (-15, 10, 10, -20),  # negative times floor, they do not truncate
        (-10, 10, 10, -10),
        (-7, 10, 5, -15),
        (-1, 10, 3, -9),
    ],
)
def test_earliest_open_event_time(watermark: int, size: int, slide: int, expected: int) -> None:
    window = WindowSpec(duration_ms=size, slide_ms=slide, watermark_delay_ms=0)
    assert earliest_open_event_ms(watermark, window) == expected


def has_open_window(t: int, watermark: int, window: WindowSpec) -> bool:
    """Brute force: the windows holding t start at multiples of the slide in (t - size, t]."""
    size, slide = window.duration_ms, window.slide_ms
    starts = range((t - size) // slide + 1, t // slide + 1)
    return any(k * slide + size > watermark for k in starts)


def test_earliest_open_event_time_matches_brute_force_over_the_windows() -> None:
    for size in (1, 3, 6, 10):
        for slide in range(1, size + 1):
            window = WindowSpec(duration_ms=size, slide_ms=slide, watermark_delay_ms=0)
            for watermark in range(-25, 26):
                t_min = earliest_open_event_ms(watermark, window)
                assert has_open_window(t_min, watermark, window), (size, slide, watermark)
                assert not has_open_window(t_min - 1, watermark, window), (size, slide, watermark)
                assert all(
                    has_open_window(t, watermark, window) for t in range(t_min, t_min + 3 * size)
                )


def test_a_slide_longer_than_the_window_is_refused() -> None:
    window = WindowSpec(duration_ms=5, slide_ms=10, watermark_delay_ms=0)
    with pytest.raises(InvalidValueError, match="slide no longer than the window"):
        earliest_open_event_ms(100, window)


# -- The batch-level plan --------------------------------------------------------------------


def test_the_restart_is_the_start_of_the_first_batch_that_can_feed_an_open_window() -> None:
    plan = plan_of(HISTORY)
    assert plan.watermark_ms == at(30)
    assert plan.earliest_open_event_ms == at(30)
    assert plan.restart_batch == 2
    assert plan.restart_offsets == offsets(200, 90)
    assert plan.end_offsets == offsets(360, 170)
    assert plan.records_to_replay == (360 - 200) + (170 - 90)
    assert plan.reasons[(TOPIC, 0)] == (
        "batch 2 is the first whose events (max 2024-05-01T10:31:20Z) can fall in a window "
        "ending after W=2024-05-01T10:30:00Z; it started reading this partition at offset 200"
    )
    assert plan.notes == ()


def test_an_event_exactly_at_t_min_feeds_an_open_window() -> None:
    facts = chain(
        (0, (10,), 0, (at(0), at(30) - 1)),  # one millisecond before T_min
        (1, (20,), at(25), (at(30), at(30))),  # exactly T_min
        (2, (30,), at(30), (at(31), at(33))),
    )
    plan = plan_of(facts, initial=offsets(0))
    assert plan.earliest_open_event_ms == at(30)
    assert plan.restart_batch == 1
    assert plan.restart_offsets == offsets(10)


def test_sliding_windows_reach_back_by_the_window_minus_the_slide() -> None:
    sliding = WindowSpec(duration_ms=10 * MINUTE, slide_ms=5 * MINUTE, watermark_delay_ms=0)
    facts = chain(
        (0, (10,), 0, (at(0), at(24.9))),  # only windows ending at or before 10:30
        (1, (20,), at(24.9), (at(25), at(29))),  # [10:25, 10:35) is open
        (2, (30,), at(30), (at(30), at(30))),
    )
    plan = plan_of(facts, window=sliding, initial=offsets(0))
    assert plan.earliest_open_event_ms == at(25)
    assert plan.restart_batch == 1
    assert plan.restart_offsets == offsets(10)


def test_nothing_to_rebuild_restarts_at_the_last_end_offsets() -> None:
    # A no-data batch advanced W past every window the events touched.
    facts = [
        batch(0, None, offsets(10, 5), 0, (at(0), at(8))),
        batch(1, offsets(10, 5), offsets(10, 5), at(10), None),
    ]
    plan = plan_of(facts)
    assert plan.restart_batch is None
    assert plan.restart_offsets == offsets(10, 5)
    assert plan.records_to_replay == 0
    assert "nothing to rebuild" in plan.reasons[(TOPIC, 1)]


def test_a_batch_without_valid_events_cannot_feed_but_an_unknown_one_can() -> None:
    facts = chain(
        (0, (10,), 0, (at(0), at(5))),
        (1, (12,), at(3), None),  # only malformed records: known, no valid event
        (2, (14,), at(3), (at(9), at(22))),
        (3, (16,), at(20), (at(23), at(25))),
    )
    complete = plan_of(facts, initial=offsets(0))
    assert (complete.restart_batch, complete.restart_offsets) == (2, offsets(12))
    # Batches 1 and 2 missing from the ledger are unknown: batch 1 may have held anything,
    # and with batch 2 unknown too, no watermark after it says otherwise.
    plan = plan_of(
        [facts[0], facts[3]], checkpoint=checkpoint_of(facts, keep=1), initial=offsets(0)
    )
    assert (plan.restart_batch, plan.restart_offsets) == (1, offsets(10))
    assert "batch 1 is missing from the ledger" in plan.reasons[(TOPIC, 0)]
    assert "batches 1-2 are missing from the ledger" in plan.notes


def test_batch_zero_restarts_at_the_initial_offsets_or_at_earliest() -> None:
    facts = chain((0, (10, 20), 0, (at(30), at(31))), (1, (12, 22), at(29), (at(31), at(32))))
    plan = plan_of(facts, initial=offsets(4, 6))
    assert plan.restart_batch == 0
    assert plan.restart_offsets == offsets(4, 6)
    assert "the old query started it at offset 4" in plan.reasons[(TOPIC, 0)]

    unknown = plan_of(facts, initial={})
    assert unknown.restart_offsets == offsets(EARLIEST, EARLIEST)
    assert unknown.records_to_replay is None
    assert "restarts at earliest (-2)" in unknown.reasons[(TOPIC, 1)]
    assert json.loads(json.dumps(unknown.to_json()))["restart_offsets"] == (
        '{"views":{"0":-2,"1":-2}}'
    )
    resolved = check_retention(unknown, offsets(0, 3))
    assert resolved.restart_offsets == offsets(0, 3)
    assert resolved.records_to_replay == 12 + 19
    assert "earliest available offset is 3" in resolved.reasons[(TOPIC, 1)]


def test_a_partition_that_appears_later_starts_at_its_initial_offset_or_earliest() -> None:
    facts = chain(
        (0, (10,), 0, (at(0), at(5))),
        (1, (20,), at(3), (at(30), at(31))),
    )
    later = batch(2, offsets(20), {**offsets(30), (TOPIC, 1): 7}, at(29), (at(31), at(32)))
    facts.append(later)
    plan = plan_of(facts, initial=offsets(0))
    assert plan.restart_offsets == {**offsets(10), (TOPIC, 1): EARLIEST}
    assert "this partition first appears in batch 2" in plan.reasons[(TOPIC, 1)]
    assert "restarts at earliest (-2)" in plan.reasons[(TOPIC, 1)]
    with_initial = plan_of(facts, initial={**offsets(0), (TOPIC, 1): 0})
    assert with_initial.restart_offsets == {**offsets(10), (TOPIC, 1): 0}
    assert "starts at the query's initial offset 0" in with_initial.reasons[(TOPIC, 1)]


# -- Unknown batches: gaps, holes, a ledger behind ----------------------------------------------

# Delay 2 minutes: W = 10:33, T_min = 10:30, and batch 2 is the first to reach 10:30.
FOUR = chain(
    (0, (10,), 0, (at(0), at(15))),
    (1, (20,), at(13), (at(16), at(19))),
    (2, (30,), at(17), (at(19), at(35))),
    (3, (40,), at(33), (at(34), at(36))),
)


def test_a_gap_marker_makes_a_batch_unknown_even_with_a_record() -> None:
    plan = plan_of(HISTORY, gaps=(2,))
    assert (plan.restart_batch, plan.restart_offsets) == (2, offsets(200, 90))
    assert "batch 2 has a ledger gap marker" in plan.reasons[(TOPIC, 0)]
    assert "the end of batch 1 (checkpoint offsets/1)" in plan.reasons[(TOPIC, 0)]
    # Batch 1 is bounded by batch 2's watermark while someone still knows it.
    gapped = plan_of(HISTORY, gaps=(1, 2), checkpoint=checkpoint_of(HISTORY, keep=2))
    assert (gapped.restart_batch, gapped.restart_offsets) == (1, offsets(100, 50))
    assert "the end of batch 0 (ledger batch 0)" in gapped.reasons[(TOPIC, 1)]
    assert "the ledger has gap markers for batches 1-2" in gapped.notes


def test_a_ledger_behind_the_checkpoint_falls_back_to_the_checkpoint_offsets() -> None:
    facts = chain(
        (0, (10,), 0, (at(0), at(5))),
        (1, (20,), at(3), (at(6), at(9))),
        (2, (30,), at(7), (at(10), at(12))),
        (3, (40,), at(10), (at(40), at(42))),
        (4, (50,), at(40), (at(43), at(44))),
    )
    checkpoint = checkpoint_of(facts, keep=3, next_watermark_ms=at(42))
    plan = plan_of(facts[:2], checkpoint=checkpoint, initial=offsets(0))
    # Batch 2 is unknown, and only batch 3's watermark (10:10, from offsets/3) bounds it: its
    # events may reach 10:12, not T_min = 10:30. Batch 3 is unknown and not bounded.
    assert plan.watermark_ms == at(40)
    assert plan.restart_batch == 3
    assert plan.restart_offsets == offsets(30)
    reason = plan.reasons[(TOPIC, 0)]
    assert "batch 3 is not in the ledger yet (the ledger is behind the checkpoint)" in reason
    assert "the watermark after it allows events up to 2024-05-01T10:42:00Z" in reason
    assert "the end of batch 2 (checkpoint offsets/2)" in reason
    assert (
        "the ledger is behind the checkpoint: it ends at batch 1, the checkpoint's last "
        "commit is 4 (batches 2-4 not recorded)"
    ) in plan.notes
    assert any("unknown batches 2 cannot reach an open window" in note for note in plan.notes)


def test_without_the_next_watermark_an_unknown_batch_is_assumed_to_feed() -> None:
    # Batch 1 is missing and the checkpoint kept only offsets/3; the ledger's batch 2 ran
    # with watermark 10:17, which bounds batch 1's events below 10:19 < T_min = 10:30.
    plan = plan_of([FOUR[0], *FOUR[2:]], checkpoint=checkpoint_of(FOUR, keep=1), initial=offsets(0))
    assert (plan.restart_batch, plan.restart_offsets) == (2, offsets(20))
    # With a gap marker on batch 2 as well, nothing bounds batch 1.
    gapped = plan_of(
        [FOUR[0], *FOUR[2:]], checkpoint=checkpoint_of(FOUR, keep=1), initial=offsets(0), gaps=(2,)
    )
    assert (gapped.restart_batch, gapped.restart_offsets) == (1, offsets(10))


def test_an_unknown_batch_is_bounded_by_the_largest_delay_the_generation_ran_with() -> None:
    # Batch 1 is missing and batch 2 ran with watermark 10:17. With the window's delay of 2
    # minutes, batch 1's events stay below 10:19 < T_min = 10:30. An earlier run on the same
    # checkpoint used 15 minutes, so they may reach 10:32, in a window still open.
    ledger = [FOUR[0], *FOUR[2:]]
    checkpoint = checkpoint_of(FOUR, keep=1)

    def plan(max_delay: int | None) -> RestartPlan:
        return plan_restart(
            window=TUMBLING,
            checkpoint=checkpoint,
            ledger=ledger,
            initial_offsets=offsets(0),
            max_watermark_delay_ms=max_delay,
        )

    assert (plan(None).restart_batch, plan(None).restart_offsets) == (2, offsets(20))
    wider = plan(15 * MINUTE)
    assert (wider.restart_batch, wider.restart_offsets) == (1, offsets(10))
    assert "allows events up to 2024-05-01T10:32:00Z" in wider.reasons[(TOPIC, 0)]
    # The window's own delay is the least a run used: a smaller maximum changes nothing.
    assert plan(0) == plan(None)


def test_w_is_never_below_what_the_generation_before_wrote() -> None:
    # The old generation started from a plan with the filter window.end > 10:45, and it
    # stopped with its own watermark at 10:30 (say, a longer delay than before). Windows
    # ending up to 10:45 were written by the generation before it: W is 10:45, T_min 10:40,
    # and no batch of the old generation holds an event that late.
    plan = plan_of(HISTORY, written_through=at(45))
    assert (plan.watermark_ms, plan.earliest_open_event_ms) == (at(45), at(40))
    assert plan.restart_batch is None
    assert plan.restart_offsets == offsets(360, 170)
    assert (
        "the old generation's last watermark is 2024-05-01T10:30:00Z, but it started from a "
        "plan that left every window ending at or before 2024-05-01T10:45:00Z to the "
        "generation before it, which wrote them: W is 2024-05-01T10:45:00Z"
    ) in plan.notes
    # A plan's W below the generation's own changes nothing.
    assert plan_of(HISTORY, written_through=at(20)) == plan_of(HISTORY)


@pytest.mark.parametrize(
    ("window_changed", "floor", "expected"),
    [
        (False, None, (at(34), None)),  # the usual upgrade: window.end > W
        (False, at(12), (at(34), at(12))),  # an earlier window change's split stays
        (True, None, (None, at(30))),  # a new window: split where the written ones end
        (True, at(31), (None, at(31))),  # ... never below an earlier split
        (True, at(12), (None, at(30))),
    ],
)
def test_the_replay_filter_carries_every_earlier_split(
    window_changed: bool, floor: int | None, expected: tuple[int | None, int | None]
) -> None:
    assert replay_filter_bounds(at(34), TUMBLING, window_changed, floor) == expected


def test_a_restart_batch_without_start_offsets_uses_the_last_known_boundary() -> None:
    # Batch 1 is missing (bounded by batch 2's watermark); batch 2 lost its start offsets.
    without_start = batch(2, None, offsets(30), at(17), (at(19), at(35)))
    plan = plan_of(
        [FOUR[0], without_start, FOUR[3]],
        checkpoint=checkpoint_of(FOUR, keep=1),
        initial=offsets(0),
    )
    assert (plan.restart_batch, plan.restart_offsets) == (2, offsets(10))
    assert (
        "its start offsets are not recorded, so the restart uses the end of batch 0 (ledger "
        "batch 0), the last known boundary before it: offset 10"
    ) in plan.reasons[(TOPIC, 0)]


# -- Refusals --------------------------------------------------------------------------------


def test_a_ledger_ahead_of_the_checkpoint_is_refused() -> None:
    with pytest.raises(LedgerAheadError, match="ledger records batch 4 but the checkpoint's last"):
        plan_of(HISTORY, checkpoint=checkpoint_of(HISTORY[:4]))
    with pytest.raises(LedgerAheadError, match="batch 9"):
        plan_of(HISTORY, gaps=(9,))


def test_a_checkpoint_without_a_commit_is_refused() -> None:
    with pytest.raises(NoCommittedBatchError, match="no committed batch"):
        plan_restart(
            window=TUMBLING, checkpoint=CheckpointFacts(last_committed_batch=None), ledger=[]
        )


def test_offsets_going_backwards_are_refused() -> None:
    backwards = chain((0, (10, 5), 0, None), (1, (8, 6), 0, None))
    with pytest.raises(InconsistentInputsError, match="batch 1 ends views partition 0 at 8"):
        plan_of(backwards)
    overlapping = [HISTORY[0], batch(1, offsets(90, 50), offsets(200, 90), at(10), None)]
    with pytest.raises(InconsistentInputsError, match="batch 1 starts views partition 0 at 90"):
        plan_of(overlapping)
    reversed_batch = [
        batch(0, None, offsets(10), 0, None),
        batch(1, offsets(10), offsets(9), 0, None),
    ]
    with pytest.raises(InconsistentInputsError, match="offsets go backwards"):
        plan_of(reversed_batch)


def test_two_different_records_of_one_batch_are_refused() -> None:
    other = batch(1, offsets(100, 50), offsets(201, 90), at(10), None)
    with pytest.raises(InconsistentInputsError, match="two different records of batch 1"):
        plan_of([*HISTORY, other], checkpoint=checkpoint_of(HISTORY))


def test_one_event_time_bound_without_the_other_is_refused() -> None:
    with pytest.raises(InconsistentInputsError, match="only one of its min and max"):
        BatchFacts(0, None, offsets(1), 0, 5, None)


def test_w_comes_from_the_checkpoint_and_else_from_the_ledger() -> None:
    last = HISTORY[-1]
    disagreeing = CheckpointFacts(
        last_committed_batch=4,
        batches=(CheckpointBatch(4, last.end_offsets, at(29)),),
    )
    plan = plan_of(HISTORY, checkpoint=disagreeing)
    assert plan.watermark_ms == at(29)
    assert any("the checkpoint decides" in note for note in plan.notes)

    purged = CheckpointFacts(last_committed_batch=4, batches=())
    from_ledger = plan_of(HISTORY, checkpoint=purged)
    assert from_ledger.watermark_ms == at(30)
    assert any("no longer holds offsets/4" in note for note in from_ledger.notes)

    with pytest.raises(UnknownWatermarkError, match="offsets/4"):
        plan_of(HISTORY, checkpoint=purged, gaps=(4,))


def test_ledger_and_checkpoint_disagreeing_on_offsets_take_the_smaller() -> None:
    checkpoint = CheckpointFacts(
        last_committed_batch=4,
        batches=(
            CheckpointBatch(1, offsets(190, 95), at(10)),
            *checkpoint_of(HISTORY, keep=3).batches,
        ),
    )
    plan = plan_of(HISTORY, checkpoint=checkpoint)
    assert plan.restart_offsets == offsets(190, 90)
    assert any("disagree on batch 1's end offsets" in note for note in plan.notes)


def test_planning_errors_are_pipeline_errors() -> None:
    for error in (
        NoCommittedBatchError,
        LedgerAheadError,
        UnknownWatermarkError,
        InconsistentInputsError,
        OffsetsOutOfRetentionError,
    ):
        assert issubclass(error, PlanningError)
    assert issubclass(PlanningError, PipelineError)


# -- Retention -------------------------------------------------------------------------------


def test_offsets_deleted_by_retention_are_refused_with_the_numbers() -> None:
    plan = plan_of(HISTORY)
    with pytest.raises(OffsetsOutOfRetentionError) as caught:
        check_retention(plan, offsets(250, 80))
    message = str(caught.value)
    assert "topic views partition 0 needs offset 200, the earliest available is 250" in message
    assert "(50 records lost)" in message
    assert "partition 1" not in message
    assert "--accept-data-loss" in message
    assert [loss.lost_records for loss in caught.value.losses] == [50]


def test_accepting_data_loss_moves_up_to_the_earliest_available() -> None:
    plan = check_retention(plan_of(HISTORY), offsets(250, 80), accept_data_loss=True)
    assert plan.restart_offsets == offsets(250, 90)
    assert plan.records_to_replay == 110 + 80
    assert "moved up to the earliest available offset 250" in plan.reasons[(TOPIC, 0)]
    assert "50 records lost (accepted)" in plan.reasons[(TOPIC, 0)]
    assert plan.to_json()["data_loss"] == [
        {
            "topic": TOPIC,
            "partition": 0,
            "needed_offset": 200,
            "earliest_available": 250,
            "lost_records": 50,
        }
    ]


def test_a_partition_the_broker_does_not_know_is_refused() -> None:
    with pytest.raises(InconsistentInputsError, match="no earliest offset for views partition 1"):
        check_retention(plan_of(HISTORY), {(TOPIC, 0): 0})


# -- Tightening ------------------------------------------------------------------------------


def scanner(
    records: Mapping[PartitionKey, list[int | None]],
) -> tuple[list[tuple[PartitionKey, int, int]], Scan]:
    calls: list[tuple[PartitionKey, int, int]] = []

    def scan(key: PartitionKey, start: int, end: int) -> Iterator[tuple[int, int | None]]:
        calls.append((key, start, end))
        for offset in range(start, end):
            yield offset, records[key][offset]

    return calls, scan


def test_tightening_starts_each_partition_at_its_first_feeding_record() -> None:
    facts = chain((0, (4, 3), 0, (at(0), at(1))), (1, (10, 6), at(30), (at(29), at(31))))
    plan = plan_of(facts)
    assert plan.restart_offsets == offsets(4, 3)
    old: list[int | None] = [at(0)] * 4
    times: dict[PartitionKey, list[int | None]] = {
        (TOPIC, 0): [*old, at(29), None, at(30), at(29.9), at(31), at(30.5)],
        (TOPIC, 1): [*old[:3], at(29), None, at(29.99)],
    }
    calls, scan = scanner(times)
    tightened = tighten(plan, scan)
    assert calls == [((TOPIC, 0), 4, 10), ((TOPIC, 1), 3, 6)]
    assert tightened.restart_offsets == offsets(6, 6)
    assert "offset 6 holds the first record" in tightened.reasons[(TOPIC, 0)]
    assert "no record in offsets 3-5" in tightened.reasons[(TOPIC, 1)]
    summary = tightened.tightening
    assert summary is not None
    assert summary.batch_level_records == 6 + 3
    assert summary.replayed_records == 4
    assert summary.feeding_records == 3
    assert summary.amplification == pytest.approx(4 / 3)
    assert summary.batch_level_amplification == pytest.approx(9 / 3)
    assert tightened.records_to_replay == 4
    assert json.dumps(tightened.to_json())


def test_tightening_without_counting_stops_at_the_first_feeding_record() -> None:
    facts = chain((0, (10,), at(30), (at(1), at(31))))
    plan = plan_of(facts, initial=offsets(0))

    def scan(key: PartitionKey, start: int, end: int) -> Iterator[tuple[int, int | None]]:
        yield 0, at(1)
        yield 1, at(30)
        raise AssertionError("read past the first feeding record")

    tightened = tighten(plan, scan, count_feeding=False)
    assert tightened.restart_offsets == offsets(1)
    assert tightened.tightening is not None
    assert tightened.tightening.feeding_records is None
    assert tightened.tightening.amplification is None


def test_tightening_refuses_earliest_and_a_scan_out_of_order() -> None:
    facts = chain((0, (10,), 0, (at(30), at(31))))
    with pytest.raises(PlanningError, match="resolve it with the broker's earliest offsets"):
        tighten(plan_of(facts, initial={}), lambda key, start, end: iter(()))
    with pytest.raises(InconsistentInputsError, match="offsets must ascend within range"):
        tighten(plan_of(facts, initial=offsets(0)), lambda key, start, end: iter([(3, 1), (2, 1)]))


# -- Late records ----------------------------------------------------------------------------


def late_count(
    times: Mapping[PartitionKey, list[int | None]],
    ranges: Mapping[PartitionKey, tuple[int, int]],
    *,
    window: WindowSpec = TUMBLING,
    after: int | None = at(34),
    from_event: int | None = None,
) -> LateRecords:
    return count_late_records(
        ranges,
        scanner(times)[1],
        window=window,
        replay_after_ms=after,
        replay_from_event_ms=from_event,
    )


def test_late_records_are_those_whose_every_window_ended_at_or_before_w() -> None:
    # W = 10:34: 10:30-10:40 is open, 10:20-10:30 was written. The old generation read
    # offsets 0-1 of partition 0; the rest was waiting when the plan was made.
    times: dict[PartitionKey, list[int | None]] = {
        (TOPIC, 0): [at(33), at(1), at(29.999), at(30), None, at(12), at(45)],
        (TOPIC, 1): [at(5), at(36)],
    }
    late = late_count(times, {(TOPIC, 0): (2, 7), (TOPIC, 1): (0, 2)})
    assert late.before_event_ms == at(30)
    assert (late.scanned_records, late.malformed_records) == (5 + 2, 1)
    # 10:29:59.999, 10:12 and 10:05; not 10:30 (its window is open), nor the malformed one.
    assert late.late_records == 3
    assert late.start_offsets == offsets(2, 0) and late.end_offsets == offsets(7, 2)
    assert json.loads(json.dumps(late.to_json()))["late_records"] == 3
    text = late.explain()
    assert "Late records: 3 of the 7 records waiting" in text
    assert "before 2024-05-01T10:30:00Z" in text
    assert "as a run that never stopped would have" in text


def test_an_event_with_one_window_still_open_is_not_late() -> None:
    # Sliding windows of 10 minutes every 5, W = 10:34: 10:25-10:35 is still open, so an
    # event at 10:26 counts there though 10:20-10:30 was written; one at 10:24 is late.
    sliding = WindowSpec(duration_ms=10 * MINUTE, slide_ms=5 * MINUTE, watermark_delay_ms=0)
    times: dict[PartitionKey, list[int | None]] = {(TOPIC, 0): [at(26), at(24), at(25)]}
    late = late_count(times, {(TOPIC, 0): (0, 3)}, window=sliding)
    assert late.before_event_ms == at(25)
    assert late.late_records == 1


def test_after_a_window_change_records_before_the_split_are_late() -> None:
    times: dict[PartitionKey, list[int | None]] = {(TOPIC, 0): [at(19), at(20), at(21)]}
    late = late_count(times, {(TOPIC, 0): (0, 3)}, after=None, from_event=at(20))
    assert (late.before_event_ms, late.late_records) == (at(20), 1)
    assert "the generations split there" in late.explain()
    # An earlier split above T_min of W is the bound that holds.
    assert late_event_threshold_ms(TUMBLING, at(34), at(31)) == at(31)
    assert late_event_threshold_ms(TUMBLING, None, None) is None


def test_nothing_waiting_reads_nothing_and_says_later_records_are_dropped_too() -> None:
    calls, scan = scanner({})
    late = count_late_records(
        {(TOPIC, 0): (7, 7)},
        scan,
        window=TUMBLING,
        replay_after_ms=at(34),
        replay_from_event_ms=None,
    )
    assert calls == []
    assert (late.scanned_records, late.late_records) == (0, 0)
    assert "none waiting yet" in late.explain()
    assert "Records that arrive later with event times before" in late.explain()


def test_counting_late_records_refuses_unresolved_offsets_and_a_scan_out_of_order() -> None:
    with pytest.raises(PlanningError, match="needs resolved offsets"):
        late_count({}, {(TOPIC, 0): (EARLIEST, 3)})
    with pytest.raises(InconsistentInputsError, match="offsets must ascend within range"):
        count_late_records(
            {(TOPIC, 0): (0, 5)},
            lambda key, start, end: iter([(3, at(1)), (2, at(1))]),
            window=TUMBLING,
            replay_after_ms=at(34),
            replay_from_event_ms=None,
        )


# -- JSON and words --------------------------------------------------------------------------


def test_the_json_form_is_stable_and_canonical() -> None:
    facts = chain((0, (11,) * 11, 0, (at(31), at(32))))
    plan = plan_of(facts, initial=offsets(*range(11)))
    document = plan.to_json()
    assert list(document) == [
        "last_committed_batch",
        "watermark_ms",
        "replay_after_ms",
        "replay_filter",
        "window",
        "earliest_open_event_ms",
        "restart_batch",
        "restart_offsets",
        "end_offsets",
        "records_to_replay",
        "partitions",
        "notes",
        "data_loss",
        "tightening",
    ]
    assert document["restart_offsets"] == (
        '{"views":{"0":0,"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9,"10":10}}'
    )
    assert document["replay_filter"] == f"window.end > {plan.watermark_ms}"
    partitions = document["partitions"]
    assert isinstance(partitions, list)
    assert [entry["partition"] for entry in partitions] == list(range(11))
    assert json.loads(json.dumps(document)) == document


def test_the_explanation_names_w_the_open_windows_and_each_partition() -> None:
    lines = plan_of(HISTORY).explain()
    text = "\n".join(lines)
    assert "watermark W = 2024-05-01T10:30:00Z" in text
    assert "tumbling windows of 10 minutes, watermark delay 2 minutes" in text
    assert "events from 2024-05-01T10:30:00Z on" in text
    assert "views partition 1 restarts at 90: batch 2 is the first" in text
    assert "Records to replay: 240." in text


# -- Facts from the ledger's text ------------------------------------------------------------


def test_flat_offsets_reads_offsets_text_once_and_read_only() -> None:
    text = '{"clicks":{"0":3},"views":{"0":1,"10":7,"2":5}}'
    flat = flat_offsets(text)
    assert flat == {("clicks", 0): 3, ("views", 0): 1, ("views", 2): 5, ("views", 10): 7}
    assert flat_offsets(text) is flat  # a batch's start is the text of the one before's end
    with pytest.raises(TypeError):
        flat[("views", 0)] = 2  # type: ignore[index]
    # Python's json.dumps spacing is read too.
    assert flat_offsets('{"views": {"0": 1}}') == {("views", 0): 1}


@pytest.mark.parametrize(
    "text", ["", "[]", '{"views":{"0":true}}', '{"views":{"x":1}}', '{"views":[1]}', "{"]
)
def test_flat_offsets_refuses_what_is_not_offsets_with_the_offsets_message(text: str) -> None:
    with pytest.raises(InvalidOffsetsError, match="offsets"):
        flat_offsets(text)


def test_facts_built_from_text_plan_like_facts_built_from_dicts() -> None:
    texts = [
        BatchFacts(
            batch_id=facts.batch_id,
            start_offsets=None
            if facts.start_offsets is None
            else flat_offsets(json.dumps(_nested(facts.start_offsets))),
            end_offsets=flat_offsets(json.dumps(_nested(facts.end_offsets))),
            watermark_ms=facts.watermark_ms,
            min_event_time_ms=facts.min_event_time_ms,
            max_event_time_ms=facts.max_event_time_ms,
        )
        for facts in HISTORY
    ]
    assert plan_of(texts, checkpoint=checkpoint_of(HISTORY)).to_json() == plan_of(HISTORY).to_json()


def _nested(flat: Mapping[PartitionKey, int]) -> dict[str, dict[str, int]]:
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in flat.items():
        nested.setdefault(topic, {})[str(partition)] = offset
    return nested


# -- A handoff at C --------------------------------------------------------------------------


def handoff_plan(boundary_ms: int, facts: list[BatchFacts] = HISTORY) -> RestartPlan:
    return plan_restart(
        window=TUMBLING,
        checkpoint=checkpoint_of(facts),
        ledger=facts,
        initial_offsets=offsets(0, 0),
        handoff_at_ms=boundary_ms,
    )


def test_a_handoff_plans_for_w_at_c_ahead_of_the_old_watermark() -> None:
    # W is 10:30. With C at 10:40 the new generation owns the windows from [10:40, 10:50)
    # on: T_min is 10:40, and no batch so far holds an event that late, so it starts at the
    # old generation's current end and reads what comes, beside it.
    plan = handoff_plan(at(40))
    assert (plan.watermark_ms, plan.earliest_open_event_ms) == (at(40), at(40))
    assert plan.restart_batch is None
    assert plan.restart_offsets == offsets(360, 170)
    assert any(note.startswith("a handoff at C = 2024-05-01T10:40:00Z") for note in plan.notes)


def test_a_handoff_replays_from_the_first_batch_with_an_event_after_c() -> None:
    # The last batch ran with W = 10:30 and read an event of 10:41, in the window
    # [10:40, 10:50) the new generation owns: it reads that batch again.
    facts = [*HISTORY[:4], batch(4, offsets(350, 160), offsets(360, 170), at(30), (at(31), at(41)))]
    plan = handoff_plan(at(40), facts)
    assert plan.restart_batch == 4
    assert plan.restart_offsets == offsets(350, 160)
    # An ordinary upgrade at W = 10:30 would read batches 2 to 4 again.
    assert plan_of(facts).restart_batch == 2


@pytest.mark.parametrize(
    ("boundary", "complaint"), [(at(45), "not the end"), (at(30), "already reached")]
)
def test_a_handoff_refuses_a_c_that_is_no_window_end_or_is_behind(
    boundary: int, complaint: str
) -> None:
    with pytest.raises(PlanningError, match=complaint):
        handoff_plan(boundary)
