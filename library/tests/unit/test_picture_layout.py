"""What the picture of a plan shows, decided without matplotlib: the panels, the batches in
each, the written and open windows, and the summary when there are many partitions."""

from __future__ import annotations

import dataclasses
import json
from itertools import pairwise

from pyspark_kafka_upgrade.model.plan import PartitionRestart
from pyspark_kafka_upgrade.model.replay_filter import ReplayFilter
from pyspark_kafka_upgrade.model.restart import RestartKind
from pyspark_kafka_upgrade.model.scans import WaitingScan
from pyspark_kafka_upgrade.picture.layout import MAX_BOXES, PANELS_SUMMARISED, plan_picture
from pyspark_kafka_upgrade.values.words import watermark_text
from support.pictures import BATCHES, MINUTE, PLAN, T_MIN, W, batch, two_hundred_partitions


def test_a_partition_panel_holds_its_batches_from_just_before_the_restart() -> None:
    plan = dataclasses.replace(
        PLAN, partitions=(dataclasses.replace(PLAN.partitions[0], restart_offset=30),)
    )
    picture = plan_picture(plan, BATCHES, {("t", 0): 0})
    [panel] = picture.panels
    assert (panel.restart_offset, panel.old_end_offset, panel.restart.records_to_replay) == (
        30,
        40,
        10,
    )
    # Two written batches before the first one replayed give context; batch 0 is left out.
    assert [(b.first_batch, b.start_offset, b.end_offset) for b in panel.boxes] == [
        (1, 10, 20),
        (2, 20, 30),
        (3, 30, 40),
    ]
    assert [b.can_feed_open for b in panel.boxes] == [False, False, True]
    assert picture.earliest_open_ms == T_MIN
    assert not picture.summarised


def test_the_first_batch_starts_where_the_query_started_the_partition() -> None:
    plan = dataclasses.replace(
        PLAN, partitions=(dataclasses.replace(PLAN.partitions[0], restart_offset=0),)
    )
    [panel] = plan_picture(plan, BATCHES, {("t", 0): 0}).panels
    assert panel.boxes[0].start_offset == 0
    [unknown] = plan_picture(plan, BATCHES, None).panels
    assert [b.first_batch for b in unknown.boxes] == [1, 2, 3], "no start known for batch 0"


def test_windows_ending_at_or_before_w_are_written_the_others_open() -> None:
    picture = plan_picture(PLAN, BATCHES)
    by_end = {bar.end_ms: bar.written for bar in picture.windows}
    assert by_end[T_MIN] is True  # 10:10-10:20 ends before W
    assert by_end[T_MIN + 10 * MINUTE] is False  # 10:20-10:30 is open at W = 10:24
    assert all(bar.lane == 0 for bar in picture.windows), "tumbling windows never overlap"
    low, high = picture.event_range
    assert low < T_MIN - 10 * MINUTE and high > W


def test_sliding_windows_get_lanes_so_they_do_not_overlap() -> None:
    sliding = dataclasses.replace(
        PLAN, window=dataclasses.replace(PLAN.window, slide_ms=5 * MINUTE)
    )
    picture = plan_picture(sliding, BATCHES)
    assert picture.lanes == 2
    for lane in (0, 1):
        bars = sorted((b.start_ms, b.end_ms) for b in picture.windows if b.lane == lane)
        assert all(end <= next_start for (_, end), (next_start, _) in pairwise(bars))


def test_a_long_ledger_is_drawn_as_at_most_max_boxes() -> None:
    many = [batch(i, i * 5, i * 5 + 5, T_MIN - MINUTE, T_MIN + MINUTE) for i in range(1, 500)]
    plan = dataclasses.replace(
        PLAN,
        partitions=(
            dataclasses.replace(PLAN.partitions[0], restart_offset=5, old_end_offset=2500),
        ),
    )
    [panel] = plan_picture(plan, many).panels
    assert len(panel.boxes) <= MAX_BOXES
    assert panel.boxes[0].start_offset == 5 and panel.boxes[-1].end_offset == 2500
    assert (panel.boxes[0].first_batch, panel.boxes[-1].last_batch) == (1, 499)


def test_the_ones_that_matter_are_ranked_by_loss_then_late_records_then_replay() -> None:
    def restart(number: int, end: int, lost: int = 0, late: int = 0) -> PartitionRestart:
        waiting = WaitingScan(("t", number), end, end + 5, 5, 0, 0, late)
        return PartitionRestart(
            "t", number, 20, 20, end, RestartKind.FIRST_FEEDING_RECORD, "because",
            lost_records=lost, waiting_scan=waiting,
        )  # fmt: skip

    plan = dataclasses.replace(
        PLAN,
        partitions=(
            restart(0, 500),  # the largest replay, but neither loses nor drops
            restart(1, 21, lost=1),  # loses one record: first, though it replays one
            restart(2, 22, late=9),  # drops late records: before any plain replay
            restart(3, 400),
            restart(4, 30),
            restart(5, 23, lost=1, late=1),  # loss outranks everything else
        ),
    )
    assert [panel.partition for panel in plan_picture(plan, []).panels] == [1, 2, 5]


def test_with_many_partitions_the_ones_that_matter_are_drawn_and_the_rest_summarised() -> None:
    picture = plan_picture(two_hundred_partitions(), [])
    drawn = [panel.partition for panel in picture.panels]
    # Retention loss first, then late records, then the largest replay.
    assert drawn == [7, 99, 150]
    assert len(drawn) == PANELS_SUMMARISED
    assert len(picture.summary) == 200
    assert [bar.partition for bar in picture.summary if bar.drawn] == drawn
    assert "200 partitions, 197 not drawn" in picture.summary_text
    assert "The ledger holds no batch" in picture.lines[-1]


def test_the_plans_offsets_are_in_the_pictures_metadata() -> None:
    described = json.loads(plan_picture(PLAN, BATCHES).metadata["Description"])
    assert described["restart_offsets"] == PLAN.starting_offsets == '{"t":{"0":20}}'
    assert described["watermark_ms"] == W


def test_a_watermark_that_has_not_moved_reads_not_yet_set() -> None:
    assert watermark_text(0) == "not yet set"
    assert watermark_text(W) == "2025-11-22T10:24:00Z"
    plan = dataclasses.replace(PLAN, watermark_ms=0)
    picture = plan_picture(plan, BATCHES, {("t", 0): 0})
    assert "W = not yet set" in picture.lines[0]
    # The axis follows the events read, not 1970, so the batches are in the picture.
    low, high = picture.event_range
    [panel] = picture.panels
    for box in panel.boxes:
        assert box.min_event_ms is not None and box.max_event_ms is not None
        assert low <= box.max_event_ms <= high, (low, box, high)


def test_a_window_change_draws_the_event_time_split() -> None:
    new_grid = ReplayFilter(event_time_from_ms=T_MIN)
    plan = dataclasses.replace(PLAN, replay_filter=new_grid)
    assert plan.window_changed
    picture = plan_picture(plan, BATCHES)
    assert picture.event_split_ms == T_MIN
    assert any("window spec changes" in line for line in picture.lines)
    assert plan_picture(PLAN, BATCHES).event_split_ms is None


def test_a_batch_without_valid_events_cannot_feed_an_open_window() -> None:
    malformed = [*BATCHES, batch(4, 40, 42, None, None)]
    plan = dataclasses.replace(
        PLAN, partitions=(dataclasses.replace(PLAN.partitions[0], old_end_offset=42),)
    )
    [panel] = plan_picture(plan, malformed).panels
    last = panel.boxes[-1]
    assert (last.first_batch, last.min_event_ms, last.can_feed_open) == (4, None, False)


def test_partitions_not_read_again_or_restarting_at_a_position_are_titled_so() -> None:
    partitions = (
        dataclasses.replace(PLAN.partitions[0], partition=0, restart_offset=-2),
        PartitionRestart("t", 1, None, None, 40, RestartKind.UNSUBSCRIBED, "unsubscribed"),
    )
    plan = dataclasses.replace(PLAN, partitions=partitions)
    titles = [panel.title for panel in plan_picture(plan, BATCHES).panels]
    assert "restarts at earliest" in titles[0] and "not read again" in titles[1]
