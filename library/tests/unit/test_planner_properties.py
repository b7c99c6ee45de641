"""Property tests: a restart planned from the ledger, replayed through a model of Spark.

Random event streams over several partitions (offsets dense from 0), random batch cuts,
random stop points and random window specs run through the simulator
(``pyspark_kafka_upgrade.testing._simulator``), a
model of Spark's append-mode windowed count (FACTS, "Structured Streaming semantics"). The
old run's batches become ledger facts the way the listener records them (start and end
offsets, watermark, min and max valid event time), sometimes with gap markers, holes or a
ledger behind the checkpoint. The planner's restart is then replayed as a new query with
no watermark, empty state and the replay filter ``window.end > W``, and the tests check:

- streams whose disorder stays within the watermark delay: old output + new output equals
  the uninterrupted run's output, row for row;
- any disorder: no window is written by both generations, and every event the old
  generation read counts exactly once in each of its windows ending after W;
- always: no partition restarts after the earliest record that feeds an open window (a
  brute-force oracle over the stream), and the tightened restart is exactly that record.

An upgrade that changes the window spec replays instead with the event-time filter
``event_time >= E``, E = ``last_written_window_end_ms(W, old window)``, the largest end of an
old window at or before W, and a second, independently drawn window spec (sizes not always
a multiple of the slide; a watermark delay no shorter than the old one, so the stream's
disorder stays within it). From the planner's restart and from the tightened one, with
disorder within the delay:

- the old generation wrote only windows ending at or before E, and exactly the old-spec
  count of the events before E (every one of them, in each of its windows ending by E);
- the new generation wrote exactly the new-spec count of the topic's events at or after E,
  in every window, none counting an event before E;
- so each valid event of the topic is counted by exactly one generation: the event ids in
  the old rows are those before E, the ids in the new rows those at or after E.

200 examples per test by default; ``HYPOTHESIS_PROFILE=slow`` runs 2000.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyspark_kafka_upgrade.testing._simulator as simulator
from pyspark_kafka_upgrade._core.planner.restart import plan_restart
from pyspark_kafka_upgrade._core.planner.retention import (
    check_retention,
)
from pyspark_kafka_upgrade._core.planner.tightening import tighten
from pyspark_kafka_upgrade._domain.records.history import (
    BatchFacts,
    CheckpointBatch,
    CheckpointFacts,
)
from pyspark_kafka_upgrade._domain.records.restart import RestartPlan
from pyspark_kafka_upgrade._domain.records.scans import Scan
from pyspark_kafka_upgrade._domain.values.offsets import (
    PartitionKey,
)
from pyspark_kafka_upgrade._domain.values.validation import (
    WindowSpec,
)
from pyspark_kafka_upgrade._domain.values.windows import (
    earliest_open_event_ms,
    last_written_window_end_ms,
)

settings.register_profile(
    "planner", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "planner-slow", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROFILE = settings.get_profile(
    "planner-slow" if os.environ.get("HYPOTHESIS_PROFILE") == "slow" else "planner"
)

TOPIC = "views"
KEYS = ("a", "b")
# Ledger damage, weighted towards intact batches.
DAMAGE = ("ok", "ok", "ok", "ok", "ok", "missing", "gap", "gap-with-record")


# -- Scenarios -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """An event stream, the old run's batch cuts, its stop point and the ledger's state."""

    windows: simulator.Windows
    topic: dict[int, list[simulator.Record]]
    # Data batches of the uninterrupted run: per-partition read-up-to offsets, idle after.
    schedule: list[tuple[dict[int, int], bool]]
    stop_after: int  # batches the old generation committed
    damage: list[str]  # per committed batch
    ledger_behind: int  # batches at the end that the ledger has not recorded yet
    checkpoint_keeps: int  # offsets/<k> files the checkpoint still has
    initial_known: bool  # whether the caller knows the old query's initial offsets
    # Ordered streams: the arrival order as (partition, offset), and the new generation's
    # cuts as positions in it, with idle-after flags.
    order: list[tuple[int, int]] = field(default_factory=list)
    new_cuts: list[tuple[int, bool]] = field(default_factory=list)
    # Unordered streams: the new generation's batches after the replay, as per-partition
    # increments, with idle-after flags.
    new_steps: list[tuple[list[int], bool]] = field(default_factory=list)


@st.composite
def window_specs(draw: st.DrawFn) -> simulator.Windows:
    size = draw(st.sampled_from([3, 5, 10, 20]))
    slide = draw(st.one_of(st.just(size), st.integers(1, size)))
    delay = draw(st.integers(0, 15))
    return simulator.Windows(size_ms=size, slide_ms=slide, delay_ms=delay)


# Sliding windows whose size is not a multiple of the slide: their ends are not slide
# boundaries. window_specs draws them too, but rarely enough to weight them up where it counts.
UNEVEN = ((5, 2), (5, 3), (7, 2), (7, 3), (10, 3), (10, 4), (10, 6), (20, 3), (20, 8), (20, 15))


@st.composite
def uneven_window_specs(draw: st.DrawFn) -> simulator.Windows:
    size, slide = draw(st.sampled_from(UNEVEN))
    return simulator.Windows(size_ms=size, slide_ms=slide, delay_ms=draw(st.integers(0, 15)))


@st.composite
def ledger_states(draw: st.DrawFn, committed: int) -> tuple[list[str], int, int, bool]:
    damaged = draw(st.booleans())
    damage = (
        draw(st.lists(st.sampled_from(DAMAGE), min_size=committed, max_size=committed))
        if damaged
        else ["ok"] * committed
    )
    behind = draw(st.integers(0, committed)) if damaged else 0
    keeps = draw(st.integers(1, committed))
    initial_known = draw(st.booleans()) if damaged else True
    return damage, behind, keeps, initial_known


@st.composite
def ordered_scenarios(
    draw: st.DrawFn, specs: st.SearchStrategy[simulator.Windows] | None = None
) -> Scenario:
    """Streams whose disorder stays within the delay, cut in arrival order.

    Each valid event is at least (max event time so far - delay), so no event is ever late,
    whatever the cuts, as long as every batch takes a prefix of the arrival order.
    """
    windows = draw(specs if specs is not None else window_specs())
    partitions = draw(st.integers(1, 3))
    items = draw(
        st.lists(
            st.tuples(
                st.integers(0, partitions - 1),
                st.integers(0, 9),  # 0: malformed
                st.sampled_from(KEYS),
                st.integers(0, 8),  # how far the event runs ahead of the latest
                st.integers(0, windows.delay_ms),  # how far it falls behind the latest
            ),
            min_size=draw(st.integers(1, 60)),
            max_size=60,
        )
    )
    start = draw(st.integers(0, 30))
    topic: dict[int, list[simulator.Record]] = {p: [] for p in range(partitions)}
    order: list[tuple[int, int]] = []
    latest: int | None = None
    for event_id, (partition, roll, key, ahead, behind) in enumerate(items):
        time_ms: int | None = None
        if roll:
            base = start if latest is None else latest
            time_ms = max(0, base + ahead - behind)
            latest = time_ms if latest is None else max(latest, time_ms)
        order.append((partition, len(topic[partition])))
        topic[partition].append(simulator.Record(event_id, time_ms, key))
    # A partition the old query does not know from its start joins when it first has data.
    late_partition = partitions - 1 if partitions > 1 and draw(st.booleans()) else None
    schedule = _ordered_schedule(draw, order, late_partition)
    uninterrupted = simulator.run_schedule(simulator.AppendQuery(topic, windows), schedule).batches
    stop_after = draw(st.integers(1, len(uninterrupted)))
    damage, behind, keeps, initial_known = draw(ledger_states(stop_after))
    new_cuts = _cuts(draw, len(order))
    return Scenario(
        windows,
        topic,
        schedule,
        stop_after,
        damage,
        behind,
        keeps,
        initial_known,
        order=order,
        new_cuts=new_cuts,
    )


def _cuts(draw: st.DrawFn, length: int) -> list[tuple[int, bool]]:
    """Cut positions 1..length (the last always), each with an idle-after flag."""
    if length == 0:
        return []
    wanted = draw(st.integers(0, min(10, length - 1)))
    cuts = st.sets(st.integers(1, length), min_size=wanted, max_size=wanted)
    positions = sorted(draw(cuts) | {length})
    idle = draw(st.lists(st.booleans(), min_size=len(positions), max_size=len(positions)))
    return list(zip(positions, idle, strict=True))


def _ordered_schedule(
    draw: st.DrawFn, order: list[tuple[int, int]], late_partition: int | None
) -> list[tuple[dict[int, int], bool]]:
    partitions = {partition for partition, _offset in order}
    known = {p for p in range(max(partitions) + 1) if p != late_partition}
    schedule: list[tuple[dict[int, int], bool]] = []
    for position, idle in _cuts(draw, len(order)):
        counts = _prefix_counts(order, position)
        known |= set(counts)
        schedule.append(({p: counts.get(p, 0) for p in sorted(known)}, idle))
    return schedule


def _prefix_counts(order: Sequence[tuple[int, int]], position: int) -> dict[int, int]:
    counts: dict[int, int] = {}
    for partition, offset in order[:position]:
        counts[partition] = offset + 1
    return counts


@st.composite
def unordered_scenarios(draw: st.DrawFn) -> Scenario:
    """Any disorder, above the delay too, cut per partition at random.

    Each partition's times follow a rising trend plus noise up to ``disorder`` either way,
    so that the first batches are often entirely before T_min, as in a real stream.
    """
    windows = draw(window_specs())
    partitions = draw(st.integers(1, 3))
    disorder = draw(st.integers(0, 40))
    topic: dict[int, list[simulator.Record]] = {}
    event_id = 0
    for partition in range(partitions):
        values = draw(
            st.lists(
                st.tuples(
                    st.integers(0, 9),  # 0: malformed
                    st.integers(0, 6),  # the trend's step
                    st.integers(-disorder, disorder),
                    st.sampled_from(KEYS),
                ),
                min_size=draw(st.integers(0, 25)),
                max_size=25,
            )
        )
        topic[partition] = []
        trend = draw(st.integers(0, 20))
        for roll, step, noise, key in values:
            trend += step
            time_ms = max(0, trend + noise) if roll else None
            topic[partition].append(simulator.Record(event_id, time_ms, key))
            event_id += 1
    batches = draw(st.integers(1, 12))
    steps = draw(st.lists(increments(partitions, 4), min_size=batches, max_size=batches))
    schedule: list[tuple[dict[int, int], bool]] = []
    position = dict.fromkeys(topic, 0)
    for reads, idle in steps:
        moved = {
            p: min(len(topic[p]), position[p] + read)
            for p, read in zip(sorted(topic), reads, strict=True)
        }
        if moved == position:
            continue  # Spark runs no batch without new data
        position = moved
        schedule.append((dict(position), idle))
    if not schedule:
        # Nothing moved: read everything in one batch, or a single empty-topic batch.
        schedule = [({p: len(records) for p, records in topic.items()}, True)]
    uninterrupted = simulator.run_schedule(simulator.AppendQuery(topic, windows), schedule).batches
    stop_after = draw(st.integers(1, len(uninterrupted)))
    damage, behind, keeps, initial_known = draw(ledger_states(stop_after))
    new_steps = draw(st.lists(increments(partitions, 6), max_size=6))
    return Scenario(
        windows,
        topic,
        schedule,
        stop_after,
        damage,
        behind,
        keeps,
        initial_known,
        new_steps=new_steps,
    )


@st.composite
def window_changes(draw: st.DrawFn) -> tuple[Scenario, simulator.Windows]:
    """An ordered scenario and the window spec an upgrade changes it to.

    The new size and slide are drawn independently of the old ones, each a size that is not
    a multiple of the slide half the time; the new delay is at least the old one, so the
    stream's disorder stays within it and no event is late.
    """
    specs = st.one_of(window_specs(), uneven_window_specs())
    scenario = draw(ordered_scenarios(specs))
    drawn = draw(specs)
    extra = draw(st.integers(0, 10))
    new = simulator.Windows(drawn.size_ms, drawn.slide_ms, scenario.windows.delay_ms + extra)
    return scenario, new


def increments(partitions: int, most: int) -> st.SearchStrategy[tuple[list[int], bool]]:
    """How far one batch reads into each partition, and whether the source idles after it."""
    return st.tuples(
        st.lists(st.integers(0, most), min_size=partitions, max_size=partitions), st.booleans()
    )


# -- From the old run to the planner's inputs ------------------------------------------------


def flat(offsets: Mapping[int, int]) -> dict[PartitionKey, int]:
    return {(TOPIC, partition): offset for partition, offset in offsets.items()}


@dataclass(frozen=True)
class OldGeneration:
    query: simulator.AppendQuery
    plan: RestartPlan
    watermark_ms: int
    end_offsets: dict[int, int]


def old_generation(scenario: Scenario) -> OldGeneration:
    old = simulator.run_schedule(
        simulator.AppendQuery(scenario.topic, scenario.windows),
        scenario.schedule,
        stop_after=scenario.stop_after,
    )
    batches = old.batches
    last = batches[-1]
    # The listener's record of each committed batch, then the damage the ledger suffered.
    ledger: list[BatchFacts] = []
    gaps: list[int] = []
    recorded = len(batches) - scenario.ledger_behind
    for outcome, damage in zip(batches[:recorded], scenario.damage, strict=False):
        facts = BatchFacts(
            batch_id=outcome.batch_id,
            start_offsets=None if outcome.start_offsets is None else flat(outcome.start_offsets),
            end_offsets=flat(outcome.end_offsets),
            watermark_ms=outcome.watermark_ms,
            min_event_time_ms=outcome.min_event_time_ms,
            max_event_time_ms=outcome.max_event_time_ms,
        )
        if damage in ("ok", "gap-with-record"):
            ledger.append(facts)
        if damage in ("gap", "gap-with-record"):
            gaps.append(outcome.batch_id)
    checkpoint = CheckpointFacts(
        last_committed_batch=last.batch_id,
        batches=tuple(
            CheckpointBatch(b.batch_id, flat(b.end_offsets), b.watermark_ms)
            for b in batches[-scenario.checkpoint_keeps :]
        ),
        next_watermark_ms=last.next_watermark_ms,
    )
    first_known = scenario.schedule[0][0]
    initial = flat(dict.fromkeys(first_known, 0)) if scenario.initial_known else None
    window = WindowSpec(
        duration_ms=scenario.windows.size_ms,
        slide_ms=scenario.windows.slide_ms,
        watermark_delay_ms=scenario.windows.delay_ms,
    )
    plan = plan_restart(
        window=window,
        checkpoint=checkpoint,
        ledger=ledger,
        gap_batch_ids=gaps,
        initial_offsets=initial,
    )
    # No retention here: the broker still has every offset from 0, which resolves EARLIEST.
    plan = check_retention(plan, {key: 0 for key in plan.restart_offsets})
    return OldGeneration(old, plan, last.watermark_ms, dict(last.end_offsets))


def needed_offsets(scenario: Scenario, old: OldGeneration) -> dict[int, int]:
    """The brute-force oracle: per partition, the first record the old generation read that
    has a window ending after W, or the old end offset when there is none."""
    needed: dict[int, int] = {}
    for partition, end in old.end_offsets.items():
        needed[partition] = end
        for offset, record in enumerate(scenario.topic[partition][:end]):
            if record.time_ms is not None and any(
                window_end > old.watermark_ms
                for _start, window_end in scenario.windows.of(record.time_ms)
            ):
                needed[partition] = offset
                break
    return needed


def restart_of(plan: RestartPlan) -> dict[int, int]:
    return {partition: offset for (_topic, partition), offset in plan.restart_offsets.items()}


def scan_of(scenario: Scenario) -> Scan:
    def scan(key: PartitionKey, start: int, end: int) -> Iterator[tuple[int, int | None]]:
        for offset in range(start, end):
            yield offset, scenario.topic[key[1]][offset].time_ms

    return scan


def new_generation(
    scenario: Scenario,
    old: OldGeneration,
    restart: Mapping[int, int],
    schedule: Sequence[tuple[dict[int, int], bool]],
) -> simulator.AppendQuery:
    query = simulator.AppendQuery(
        scenario.topic,
        scenario.windows,
        starting_offsets=restart,
        replay_after_ms=old.watermark_ms,
    )
    simulator.run_schedule(query, schedule)
    query.flush()
    return query


def ordered_new_schedule(
    scenario: Scenario, restart: Mapping[int, int]
) -> list[tuple[dict[int, int], bool]]:
    """The new generation's batches: prefixes of the arrival order of what it reads."""
    schedule: list[tuple[dict[int, int], bool]] = []
    position = dict(restart)
    for cut, idle in scenario.new_cuts:
        counts = _prefix_counts(scenario.order, cut)
        until = {p: max(counts.get(p, 0), restart.get(p, 0)) for p in counts.keys() | restart}
        if all(until[p] == position.get(p, 0) for p in until):
            continue  # nothing new: Spark runs no batch
        schedule.append((until, idle))
        position = until
    return schedule


def unordered_new_schedule(
    scenario: Scenario, old: OldGeneration, restart: Mapping[int, int]
) -> list[tuple[dict[int, int], bool]]:
    """The replay as one batch of its own (when there is one), then new data in random cuts."""
    schedule: list[tuple[dict[int, int], bool]] = []
    if any(restart[p] < end for p, end in old.end_offsets.items()):
        schedule.append((dict(old.end_offsets), True))
    position = {p: old.end_offsets.get(p, 0) for p in scenario.topic}
    for steps, idle in scenario.new_steps:
        moved = {
            p: min(len(scenario.topic[p]), position[p] + step)
            for p, step in zip(sorted(position), steps, strict=True)
        }
        if moved != position:
            position = moved
            schedule.append((dict(position), idle))
    return schedule


def check_planner_bounds(
    scenario: Scenario, old: OldGeneration
) -> tuple[dict[int, int], RestartPlan]:
    """The planner never restarts after the oracle; tightening lands exactly on it."""
    needed = needed_offsets(scenario, old)
    restart = restart_of(old.plan)
    assert set(restart) == set(old.end_offsets)
    for partition, offset in restart.items():
        assert offset <= needed[partition], (partition, old.plan.reasons)
    tightened = tighten(old.plan, scan_of(scenario))
    assert restart_of(tightened) == needed
    summary = tightened.tightening
    assert summary is not None
    feeding = sum(
        1
        for partition, end in old.end_offsets.items()
        for record in scenario.topic[partition][:end]
        if record.time_ms is not None
        and any(end_ > old.watermark_ms for _s, end_ in scenario.windows.of(record.time_ms))
    )
    assert summary.feeding_records == feeding
    assert summary.replayed_records >= feeding
    return needed, tightened


def counted(
    windows: simulator.Windows,
    records: Iterable[simulator.Record],
    ending_by: int | None = None,
) -> dict[simulator.Group, tuple[int, ...]]:
    """Brute force: the sorted ids of the valid events in each (window, key), optionally
    only windows ending at or before ``ending_by``."""
    groups: dict[simulator.Group, list[int]] = {}
    for record in records:
        if record.time_ms is None:
            continue
        for start, end in windows.of(record.time_ms):
            if ending_by is None or end <= ending_by:
                groups.setdefault((start, end, record.key), []).append(record.event_id)
    return {group: tuple(sorted(ids)) for group, ids in groups.items()}


def sorted_ids(
    written: Mapping[simulator.Group, Sequence[int]],
) -> dict[simulator.Group, tuple[int, ...]]:
    return {group: tuple(sorted(ids)) for group, ids in written.items()}


def ids_in(written: Mapping[simulator.Group, Sequence[int]]) -> set[int]:
    return {event_id for ids in written.values() for event_id in ids}


# -- The properties --------------------------------------------------------------------------


@PROFILE
@given(ordered_scenarios())
def test_disorder_within_the_delay_restarts_row_for_row(scenario: Scenario) -> None:
    uninterrupted = simulator.AppendQuery(scenario.topic, scenario.windows)
    simulator.run_schedule(uninterrupted, scenario.schedule)
    uninterrupted.flush()
    assert all(batch.dropped_late == 0 for batch in uninterrupted.batches)
    old = old_generation(scenario)
    needed, tightened = check_planner_bounds(scenario, old)

    for restart in (restart_of(old.plan), needed):
        new = new_generation(scenario, old, restart, ordered_new_schedule(scenario, restart))
        assert all(batch.dropped_late == 0 for batch in new.batches)
        assert Counter(old.query.rows()) + Counter(new.rows()) == Counter(uninterrupted.rows())
    assert restart_of(tightened) == needed


@PROFILE
@given(unordered_scenarios())
def test_any_disorder_counts_each_old_event_once_and_writes_no_window_twice(
    scenario: Scenario,
) -> None:
    old = old_generation(scenario)
    needed, _ = check_planner_bounds(scenario, old)
    for restart in (restart_of(old.plan), needed):
        new = new_generation(scenario, old, restart, unordered_new_schedule(scenario, old, restart))

        old_groups = set(old.query.written)
        assert not old_groups & set(new.written), "a window written by both generations"
        assert all(end <= old.watermark_ms for _start, end, _key in old_groups)
        assert all(end > old.watermark_ms for _start, end, _key in new.written)
        counted: Counter[tuple[simulator.Group, int]] = Counter(
            (group, event_id)
            for written in (old.query.written, new.written)
            for group, ids in written.items()
            for event_id in ids
        )
        assert max(counted.values(), default=1) == 1, "an event counted twice in one window"
        for partition, end in old.end_offsets.items():
            for record in scenario.topic[partition][:end]:
                if record.time_ms is None:
                    continue
                for start, window_end in scenario.windows.of(record.time_ms):
                    if window_end > old.watermark_ms:
                        group = (start, window_end, record.key)
                        assert counted[(group, record.event_id)] == 1, (group, record)


@PROFILE
@given(window_changes())
def test_a_window_change_counts_each_event_in_exactly_one_generation(
    change: tuple[Scenario, simulator.Windows],
) -> None:
    """The new window spec replays with ``event_time >= E``: the generations split at E.

    Exact, because the disorder stays within both delays: no event is ever late; every
    event before E has been read by the old generation (one it had not read is at least the
    max event time it read minus the delay, so at or after W >= E); and the new generation
    reads the whole topic and is flushed, so every window it holds is written. The new
    windows that straddle E count only their events at or after E: the rest were counted
    in the old grid, which is what "exactly one generation" means across a spec change.
    """
    scenario, new_windows = change
    old = old_generation(scenario)
    _needed, tightened = check_planner_bounds(scenario, old)
    boundary = last_written_window_end_ms(old.watermark_ms, old.plan.window)
    assert old.plan.earliest_open_event_ms <= boundary <= old.watermark_ms

    records = [record for partition in scenario.topic.values() for record in partition]
    valid = {record.event_id: record.time_ms for record in records if record.time_ms is not None}
    before = [r for r in records if r.time_ms is not None and r.time_ms < boundary]
    after = [r for r in records if r.time_ms is not None and r.time_ms >= boundary]

    # 1. The old generation: only windows ending by E, and each event before E in every one
    # of its windows ending by E.
    assert all(end <= boundary for _start, end, _key in old.query.written)
    assert sorted_ids(old.query.written) == counted(scenario.windows, before, ending_by=boundary)
    old_ids = ids_in(old.query.written)
    assert old_ids == {record.event_id for record in before}

    for restart in (restart_of(old.plan), restart_of(tightened)):
        new = simulator.AppendQuery(
            scenario.topic,
            new_windows,
            starting_offsets=restart,
            replay_from_event_ms=boundary,
        )
        simulator.run_schedule(new, ordered_new_schedule(scenario, restart))
        new.flush()
        assert all(batch.dropped_late == 0 for batch in new.batches)
        # 2. The new generation: the new-spec count of every event at or after E, read
        # again from the old generation's range or for the first time, and nothing before E.
        assert sorted_ids(new.written) == counted(new_windows, after)
        new_ids = ids_in(new.written)
        assert all(valid[event_id] >= boundary for event_id in new_ids)
        # 3. Per event: exactly one generation counts it.
        assert not old_ids & new_ids
        assert old_ids | new_ids == set(valid)


def test_a_window_change_splits_at_the_last_written_end_not_at_a_slide_boundary() -> None:
    """Windows of 10 sliding every 3, then tumbling windows of 5, with W = 102.

    Old windows end at 3k + 10, so the last written one ends at E = 100: ``[90, 100)``.
    The last slide boundary, floor(W / slide) * slide = 102, is no window's end: filtering
    from 102 would drop the event at 101, which no written old window holds (its windows
    [93, 103), [96, 106) and [99, 109) all end after W), so neither generation counts it.
    """
    old_windows = simulator.Windows(size_ms=10, slide_ms=3, delay_ms=5)
    new_windows = simulator.Windows(size_ms=5, slide_ms=5, delay_ms=5)
    topic = {0: [simulator.Record(i, t, "a") for i, t in enumerate([95, 99, 101, 107])]}
    old = simulator.run_schedule(
        simulator.AppendQuery(topic, old_windows), [({0: 3}, False), ({0: 4}, True)]
    )
    watermark = old.batches[-1].watermark_ms
    assert watermark == 102
    assert sorted_ids(old.written) == {(87, 97, "a"): (0,), (90, 100, "a"): (0, 1)}
    spec = WindowSpec(duration_ms=10, slide_ms=3, watermark_delay_ms=5)
    boundary = last_written_window_end_ms(watermark, spec)
    assert boundary == 100 != watermark // 3 * 3
    # T_min = 93: the restart reads every event from offset 0.
    assert earliest_open_event_ms(watermark, spec) == 93

    def new_generation_from(replay_from: int) -> simulator.AppendQuery:
        new = simulator.AppendQuery(
            topic, new_windows, starting_offsets={0: 0}, replay_from_event_ms=replay_from
        )
        simulator.run_schedule(new, [({0: 2}, False), ({0: 4}, False)])
        new.flush()
        return new

    new = new_generation_from(boundary)
    # 95 and 99 are filtered before the watermark: it does not move (99 - 5 would be 94).
    assert (new.filtered_events, new.batches[0].next_watermark_ms) == (2, 0)
    assert sorted_ids(new.written) == {(100, 105, "a"): (2,), (105, 110, "a"): (3,)}
    assert ids_in(old.written) | ids_in(new.written) == {0, 1, 2, 3}
    assert not ids_in(old.written) & ids_in(new.written)
    # From the slide boundary instead, the event at 101 is counted by neither generation.
    at_slide = new_generation_from(watermark // 3 * 3)
    assert 2 not in ids_in(old.written) | ids_in(at_slide.written)


def test_the_last_written_window_end_is_the_largest_end_at_or_before_w() -> None:
    cases = [
        # (size, slide, W, E)
        (10, 10, 25, 20),  # tumbling: the start of W's window
        (10, 10, 30, 30),  # W on an end: that window is written (end <= W)
        (10, 5, 27, 25),  # size a multiple of the slide: ends at multiples of 5
        (10, 5, 30, 30),
        (10, 3, 102, 100),  # not a multiple: ends at 3k + 10, 1 modulo 3
        (10, 3, 101, 100),
        (10, 3, 99, 97),
        (7, 2, 20, 19),  # ends at 2k + 7, odd
        (7, 2, 0, -1),  # before any event: the window [-8, -1)
    ]
    for size, slide, watermark, expected in cases:
        spec = WindowSpec(duration_ms=size, slide_ms=slide, watermark_delay_ms=0)
        assert last_written_window_end_ms(watermark, spec) == expected, (size, slide, watermark)
    # And against brute force: the largest k * slide + size at or before W.
    for size, slide in [(5, 5), (10, 5), (10, 3), (20, 7), (3, 1)]:
        spec = WindowSpec(duration_ms=size, slide_ms=slide, watermark_delay_ms=0)
        for watermark in range(-30, 80):
            ends = [k * slide + size for k in range(-100, 100) if k * slide + size <= watermark]
            assert last_written_window_end_ms(watermark, spec) == max(ends), (size, slide)


def test_a_replay_split_across_batches_can_drop_events_the_old_generation_held() -> None:
    """Why the replay must run as one batch: split by partition (as a rate limit may split
    it), the new query's own watermark can pass events that came in order the first time.
    """
    windows = simulator.Windows(size_ms=10, slide_ms=10, delay_ms=5)
    topic = {
        0: [simulator.Record(0, 20, "a"), simulator.Record(1, 40, "a")],
        1: [simulator.Record(2, 22, "a"), simulator.Record(3, 21, "a")],
    }
    # The old run read 20, 22, 21, then 40, and stopped with W = 17: nothing written yet.
    old = simulator.run_schedule(
        simulator.AppendQuery(topic, windows), [({0: 1, 1: 2}, False), ({0: 2, 1: 2}, False)]
    )
    assert old.batches[-1].watermark_ms == 17 and not old.written
    # Partition 0 first: its 40 moves the new watermark to 35, so [20, 30) is written with
    # 20 and 22 only, and 21 then arrives late.
    split = simulator.AppendQuery(topic, windows, starting_offsets={0: 0, 1: 0}, replay_after_ms=17)
    simulator.run_schedule(split, [({0: 2}, False), ({1: 1}, False), ({1: 2}, False)])
    split.flush()
    assert (20, 30, "a", 2) in split.rows()
    whole = simulator.AppendQuery(topic, windows, starting_offsets={0: 0, 1: 0}, replay_after_ms=17)
    simulator.run_schedule(whole, [({0: 2, 1: 2}, False)])
    whole.flush()
    assert (20, 30, "a", 3) in whole.rows()


def test_the_simulator_follows_the_measured_rules() -> None:
    """FACTS' measurements: emission at end <= batchWatermarkMs, lateness against the
    previous batch's watermark, a no-data batch only when the watermark advanced."""
    windows = simulator.Windows(size_ms=10, slide_ms=10, delay_ms=5)
    topic = {0: [simulator.Record(i, t, "k") for i, t in enumerate([3, 31, 22, 52, 27, 8, 18])]}
    query = simulator.AppendQuery(topic, windows)
    first = query.run_batch({0: 2})  # 3 and 31
    assert (first.watermark_ms, first.next_watermark_ms, first.written) == (0, 26, ())
    assert query.no_data_batch_due
    idle = query.run_no_data_batch()
    assert (idle.watermark_ms, idle.written, idle.start_offsets) == (26, ((0, 10, "k"),), {0: 2})
    assert not query.no_data_batch_due
    second = query.run_batch({0: 4})  # 22 and 52: [20, 30) ends after 26, accepted
    assert (second.watermark_ms, second.dropped_late, second.next_watermark_ms) == (26, 0, 47)
    # Batch 3 runs with 47 but judges 27 and 8 against 26, the previous batch's watermark:
    # 27's [20, 30) is accepted and written in this same batch; 8's [0, 10) is dropped.
    third = query.run_batch({0: 6})
    assert (third.watermark_ms, third.dropped_late) == (47, 1)
    assert third.written == ((20, 30, "k"), (30, 40, "k"))
    assert query.written[(20, 30, "k")] == (2, 4)
    fourth = query.run_batch({0: 7})  # 18 against 47
    assert fourth.dropped_late == 1 and fourth.written == ()


def test_sliding_windows_drop_a_late_event_only_from_its_written_windows() -> None:
    windows = simulator.Windows(size_ms=10, slide_ms=5, delay_ms=0)
    topic = {0: [simulator.Record(i, t, "k") for i, t in enumerate([30, 31, 27])]}
    query = simulator.AppendQuery(topic, windows)
    query.run_batch({0: 1})
    query.run_batch({0: 2})  # runs with watermark 30
    third = query.run_batch({0: 3})  # 27 is in [20, 30) (late vs 30) and [25, 35) (open)
    assert third.dropped_late == 1
    query.flush()
    assert query.written[(25, 35, "k")] == (0, 1, 2)
