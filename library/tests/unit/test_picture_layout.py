"""What the picture of a plan shows, decided without matplotlib: the panels, the batches in
each, the written and open windows, and the summary when there are many partitions."""

from __future__ import annotations

import dataclasses
import json
from itertools import combinations, pairwise

import pytest

from pyspark_kafka_upgrade._core.picture.boxes import MAX_BOXES
from pyspark_kafka_upgrade._core.picture.layout import PANELS_SUMMARISED, PlanPicture, plan_picture
from pyspark_kafka_upgrade._core.picture.placement import Rect, Scale, Spot, Wanted, place
from pyspark_kafka_upgrade._domain.records.history import BatchFacts
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from pyspark_kafka_upgrade._domain.records.scans import WaitingScan
from pyspark_kafka_upgrade._domain.values.words import watermark_text
from support.pictures import (
    BATCHES,
    CROWDED_PLANS,
    DEMO_BATCHES,
    DEMO_W,
    MINUTE,
    PLAN,
    T_MIN,
    W,
    batch,
    demo_plan,
    two_hundred_partitions,
)


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


def sliding(plan: UpgradePlan) -> UpgradePlan:
    return dataclasses.replace(plan, window=dataclasses.replace(plan.window, slide_ms=5 * MINUTE))


# Plans whose pictures crowd their labels in different ways: the demo's (a batch of malformed
# records only, right at the old end), with records waiting after it, a window change (E
# beside W and T_min), a watermark not yet moved, sliding windows, many partitions, a long
# ledger.
CROWDED = {
    "sample": (PLAN, BATCHES),
    **CROWDED_PLANS,
    "not-moved": (dataclasses.replace(PLAN, watermark_ms=0), BATCHES),
    "sliding": (sliding(demo_plan()), DEMO_BATCHES),
    "long-ledger": (
        dataclasses.replace(
            PLAN,
            partitions=(
                dataclasses.replace(PLAN.partitions[0], restart_offset=5, old_end_offset=2500),
            ),
        ),
        [batch(i, i * 5, i * 5 + 5, T_MIN - MINUTE, T_MIN + MINUTE) for i in range(1, 500)],
    ),
}


def drawn(plan: UpgradePlan, batches: list[BatchFacts]) -> PlanPicture:
    return plan_picture(plan, batches, {("t", p): 0 for p in range(200)})


@pytest.mark.parametrize(("plan", "batches"), CROWDED.values(), ids=CROWDED.keys())
def test_no_label_covers_another_label_or_a_box(
    plan: UpgradePlan, batches: list[BatchFacts]
) -> None:
    picture = drawn(plan, batches)
    frame = picture.frame
    for panel in picture.panels:
        area = Rect(*panel.x_limits[:1], frame.bottom, panel.x_limits[1], frame.high)
        for label in panel.labels:
            assert label.room.within(area), (label, area)
            covered = [box for box, shape in zip(panel.boxes, panel.shapes, strict=True)
                       if label.room.overlaps(shape)]  # fmt: skip
            assert not covered, (label.text, covered)
        for first, second in combinations(panel.labels, 2):
            assert not first.room.overlaps(second.room), (first.text, second.text)


def test_the_demos_labels_all_find_room_in_their_panels() -> None:
    picture = drawn(demo_plan(waiting=14, late=3), DEMO_BATCHES)
    for panel in picture.panels:
        texts = {label.text for label in panel.labels}
        assert {"W 10:34:40", "T_min 10:30:00", "old end 61", "14 waiting: 3 late"} <= texts
        assert {"restart 45\nreplay 16", "batch 0", "batch 1", "batch 2"} <= texts
        assert "batch 3: no valid event" in texts
        assert not any(note.startswith("No room") for note in panel.notes), panel.notes
        # The reason is said under the panel, where it covers nothing.
        assert panel.notes[0].startswith("Why: offset 45 holds the first record")


def test_a_batch_without_a_valid_event_is_a_bar_in_a_band_under_the_event_times() -> None:
    picture = drawn(demo_plan(), DEMO_BATCHES)
    frame = picture.frame
    assert frame.band_bottom is not None and frame.band_bottom < frame.low
    [panel, _] = picture.panels
    shapes = dict(zip((box.label for box in panel.boxes), panel.shapes, strict=True))
    # Batch 3 has no event time: it is not drawn at one, it is a bar in the band.
    bar = shapes["batch 3"]
    assert frame.band_bottom < bar.y0 < bar.y1 < frame.low
    assert (bar.x0, bar.x1) == (60, 61)
    for name in ("batch 0", "batch 1", "batch 2"):
        assert shapes[name].y0 >= frame.low, name
    [label] = [label for label in panel.labels if label.role == "no-event"]
    assert label.text == "batch 3: no valid event"
    assert frame.band_bottom <= label.room.y0 and label.room.y1 <= frame.low


def test_without_a_batch_lacking_events_there_is_no_band() -> None:
    frame = drawn(PLAN, BATCHES).frame
    assert frame.band_bottom is None and frame.bottom == frame.low


def test_the_boxes_leave_room_above_them_for_the_restart_label() -> None:
    picture = drawn(demo_plan(), DEMO_BATCHES)
    frame = picture.frame
    assert frame.boxes_top < frame.high
    for panel in picture.panels:
        assert all(shape.y1 <= frame.boxes_top for shape in panel.shapes)
        [restart] = [label for label in panel.labels if label.role == "restart"]
        assert restart.room.y0 >= frame.boxes_top - 1, "over the boxes, right of its line"
        assert restart.x > 45


def test_a_label_with_no_room_is_said_under_the_panel() -> None:
    # One batch of every offset and every event time: no place beside W is clear of it.
    everything = [batch(1, 0, 40, T_MIN - 60 * MINUTE, W + 60 * MINUTE)]
    picture = drawn(PLAN, everything)
    [panel] = picture.panels
    assert "W" not in {label.role for label in panel.labels}
    assert any("No room in the panel for: " in note and "W 10:24:00" in note
               for note in panel.notes), panel.notes  # fmt: skip


def test_a_label_goes_to_its_first_spot_clear_of_boxes_and_labels() -> None:
    scale = Scale(1.0, 1.0)  # a point is a unit: "ab" at 10 points, padded, is 16.8 by 16.5
    region = Rect(0, 0, 100, 100)
    spots = (
        Spot(10, 10, "left", "bottom"),
        Spot(50, 10, "left", "bottom"),
        Spot(10, 50, "left", "bottom"),
    )
    first, second, third = (Wanted(role, "ab", 10, spots, region) for role in "abc")
    boxes = [Rect(45, 0, 70, 30)]  # the second spot is taken by a box
    placed, unplaced = place([first, second, third], boxes, scale)
    assert [(label.role, label.x, label.y) for label in placed] == [("a", 10, 10), ("b", 10, 50)]
    assert unplaced == (third,)
    outside = Wanted("d", "ab", 10, (Spot(95, 95, "left", "bottom"),), region)
    assert place([outside], [], scale)[1] == (outside,), "a spot off the panel is no spot"


def test_the_header_names_w_in_the_replay_filter_with_its_time() -> None:
    lines = drawn(demo_plan(), DEMO_BATCHES).lines
    assert "Replay filter: window.end > 1763807680000 (W = 2025-11-22T10:34:40Z)." in lines[1]


@pytest.mark.parametrize(
    ("slide", "shown"),
    [(10, "(10:30-10:40)"), (5, "(10:25-10:35, 10:30-10:40)")],
    ids=["tumbling", "sliding"],
)
def test_a_window_change_names_the_old_windows_neither_generation_writes(
    slide: int, shown: str
) -> None:
    split = DEMO_W - 4 * MINUTE - 40_000  # E = 10:30:00
    plan = dataclasses.replace(
        demo_plan(),
        window=dataclasses.replace(PLAN.window, slide_ms=slide * MINUTE),
        replay_filter=ReplayFilter(event_time_from_ms=split),
    )
    [line] = [line for line in drawn(plan, DEMO_BATCHES).lines if "window spec" in line]
    assert f"The old windows open at E {shown} are written by neither generation" in line
    assert "a dashboard of the old windows shows a gap there" in line


def test_labels_on_both_sides_of_one_line_both_find_room() -> None:
    # Tumbling windows: E is T_min, so their labels share a line, one above and one below
    # (without records waiting, both want its left end: the boxes cover its right end).
    split = DEMO_W - 4 * MINUTE - 40_000
    plan = dataclasses.replace(demo_plan(), replay_filter=ReplayFilter(event_time_from_ms=split))
    picture = drawn(plan, DEMO_BATCHES)
    assert picture.event_split_ms == picture.earliest_open_ms
    for panel in picture.panels:
        roles = {label.role for label in panel.labels}
        assert {"E", "T_min", "W"} <= roles, panel.notes
        assert not any(note.startswith("No room") for note in panel.notes), panel.notes
