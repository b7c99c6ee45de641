"""Property tests: a restart planned from the ledger, replayed through a model of Spark.

Random event streams over several partitions (offsets dense from 0), random batch cuts,
random stop points and random window specs run through ``support.append_simulator``, a
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

200 examples per test by default; ``HYPOTHESIS_PROFILE=slow`` runs 2000.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import support.append_simulator as simulator
from {{ cookiecutter.package_name }}.offsets import (
    PartitionKey,
)
from {{ cookiecutter.package_name }}.planner import (
    BatchFacts,
    CheckpointBatch,
    CheckpointFacts,
    RestartPlan,
    Scan,
    check_retention,
    plan_restart,
    tighten,
)
from {{ cookiecutter.package_name }}.validation import (
    WindowSpec,
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
def ordered_scenarios(draw: st.DrawFn) -> Scenario:
    """Streams whose disorder stays within the delay, cut in arrival order.

    Each valid event is at least (max event time so far - delay), so no event is ever late,
    whatever the cuts, as long as every batch takes a prefix of the arrival order.
    """
    windows = draw(window_specs())
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
