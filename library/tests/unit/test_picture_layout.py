"""What the picture of a plan shows, decided without matplotlib: the panels, the batches in
each, the written and open windows, and the summary when there are many partitions."""

from __future__ import annotations

import dataclasses
import json
from itertools import pairwise

from pyspark_kafka_upgrade.picture.layout import MAX_BOXES, PANELS_SUMMARISED, plan_picture
from pyspark_kafka_upgrade.values.words import watermark_text
from support.pictures import BATCHES, MINUTE, PLAN, T_MIN, W, batch, two_hundred_partitions


def test_a_partition_panel_holds_its_batches_from_just_before_the_restart() -> None:
    plan = dataclasses.replace(
        PLAN, partitions=(dataclasses.replace(PLAN.partitions[0], restart_offset=30),)
    )
    picture = plan_picture(plan, BATCHES, {("t", 0): 0})
    [panel] = picture.panels
    assert (panel.restart_offset, panel.old_end_offset, panel.records_to_replay) == (30, 40, 10)
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
    assert "W = not yet set" in plan_picture(plan, []).lines[0]
