"""A plan in words: sentences for the reasoning, a table for the partitions, reasons grouped.

Everything here is computed from the plan alone, so ``upgrade show PLAN`` prints exactly what
``upgrade plan`` printed when the file was written. ``--json`` prints the plan's own JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import groupby

from pyspark_kafka_upgrade._core.planner.late_records import explain_late, late_threshold
from pyspark_kafka_upgrade._domain.records.advice import Advice
from pyspark_kafka_upgrade._domain.records.history import EARLIEST
from pyspark_kafka_upgrade._domain.records.per_partition import known_total
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.records.restart import RestartKind, reasoning
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.words import id_ranges, table, when

# Up to this many partitions the table has a row each and every reason is printed whole;
# beyond, rows group partitions of one topic and kind, and each kind gets one example.
ROW_PER_PARTITION = 12

KIND_DESCRIPTIONS = {
    RestartKind.FIRST_FEEDING_RECORD: "its first record whose event time can fall in an open "
    "window",
    RestartKind.NO_FEEDING_RECORD: "no record in its replay range can fall in an open window: "
    "it restarts at its end",
    RestartKind.FIRST_FEEDING_BATCH: "the start of the first batch that can feed an open window "
    "(batch level, not scanned)",
    RestartKind.NEW_PARTITION: "not read before the replay's first batch: where the old query "
    "started it",
    RestartKind.NOTHING_TO_REBUILD: "no committed batch can feed an open window: it restarts "
    "at its end",
    RestartKind.SUBSCRIBED: "newly subscribed: where kafka.starting_offsets starts a partition",
    RestartKind.UNSUBSCRIBED: "no longer subscribed: not read again",
}


# The quarantine query keeps no state: the plan starts it where the old one stopped
# (``planner.decide.quarantine_start``), not at the restart, so the replay quarantines
# nothing a second time. Said under the table, where a reviewer meets the column.
QUARANTINE_COLUMN = (
    "quarantine: where the new quarantine query starts, where the old one's last committed "
    "batch ended (its own checkpoint). It keeps no state, so it does not replay: a malformed "
    "record the replay reads again is counted by `run` (malformed), not quarantined again."
)


def render_json(plan: UpgradePlan) -> str:
    return json.dumps(plan.to_json(), indent=2)


def render_advice(advice: Advice) -> str:
    return "\n".join(advice.sentences())


def render_plan(plan: UpgradePlan) -> str:
    """The plan as a reviewer reads it: why, where each partition restarts, what it costs."""
    lines = [*plan.advice.sentences(), "", *_reasoning(plan), ""]
    lines += partition_table(plan.partitions)
    lines += [QUARANTINE_COLUMN, "", *reasons(plan.partitions), *_estimates(plan)]
    lines += [f"Note: {note}." for note in plan.notes]
    layout = GenerationLayout(plan.root, plan.to_generation)
    subscribed = len(plan.restart_offsets)
    where = (
        plan.starting_offsets
        if len(plan.partitions) <= ROW_PER_PARTITION
        else f"the offsets above ({subscribed} partitions; --json names each)"
    )
    lines += [
        "",
        f"Generation {plan.to_generation} will start at {where} with the replay filter "
        f"{plan.replay_filter.explain()}, writing to {writes_to(plan, layout)}.",
    ]
    if plan.handoff is not None:
        lines.append(_handoff_sentence(plan))
    return "\n".join(lines)


def _handoff_sentence(plan: UpgradePlan) -> str:
    assert plan.handoff is not None
    return (
        f"A handoff at C = {when(plan.handoff.boundary_ms)}: generation {plan.from_generation} "
        "keeps running, takes C between two batches, writes every window ending at or before "
        f"it and then stops by itself; generation {plan.to_generation} starts beside it and "
        "writes the windows after C. The output does not pause."
    )


def _reasoning(plan: UpgradePlan) -> list[str]:
    lines = reasoning(
        plan.last_committed_batch,
        plan.watermark_ms,
        plan.window,
        plan.restart_batch,
        window_changed=plan.window_changed,
    )
    if plan.window_changed:
        split = plan.replay_filter.event_time_from_ms or 0
        lines.append(
            "The window spec changes, so the generations split in event time: the new one "
            f"counts the events from E = {when(split)} on."
        )
        lines.append(gap_sentence(split, plan.window))
    return lines


def gap_sentence(split_ms: int, old_window: WindowSpec) -> str:
    """What a window change leaves unwritten, with its times: easy to miss on a dashboard."""
    shown = ", ".join(window_span(start, end) for start, end in open_at(split_ms, old_window))
    return (
        f"The old windows open at E ({shown}) are written by neither generation: a dashboard "
        "of the old windows shows a gap there, and the new windows hold those events from E on."
    )


def open_at(split_ms: int, window: WindowSpec) -> list[tuple[int, int]]:
    """The windows of ``window``'s grid that hold E or start there: the old generation never
    wrote them (E is the end of the last one it wrote), and the new one has other windows."""
    size, slide = window.duration_ms, window.slide_ms
    first = (split_ms - size) // slide + 1  # the earliest start after E - size
    return [(k * slide, k * slide + size) for k in range(first, split_ms // slide + 1)]


def window_span(start_ms: int, end_ms: int) -> str:
    """``2025-11-22T10:30:00Z-10:40:00Z``: the end's date only when it is another day."""
    start, end = when(start_ms), when(end_ms)
    return f"{start}-{end[11:] if end[:11] == start[:11] else end}"


def partition_table(partitions: Sequence[PartitionRestart]) -> list[str]:
    """One row per partition, or per run of partitions of one topic and kind when many."""
    headers = ("topic", "partition", "restart", "quarantine", "old end", "replay", "why")
    if len(partitions) <= ROW_PER_PARTITION:
        rows = [
            (
                each.topic,
                str(each.partition),
                _position(each.restart_offset),
                _position(each.quarantine_offset),
                _position(each.old_end_offset),
                _count(each.records_to_replay),
                each.kind.value,
            )
            for each in partitions
        ]
        return table(headers, rows)
    rows = []
    for (topic, kind), group in groupby(partitions, key=lambda each: (each.topic, each.kind)):
        members = list(group)
        replay = [each.records_to_replay for each in members]
        rows.append(
            (
                topic,
                id_ranges([each.partition for each in members]),
                _spread([each.restart_offset for each in members]),
                _spread([each.quarantine_offset for each in members]),
                _spread([each.old_end_offset for each in members]),
                "?" if None in replay else _count(sum(count or 0 for count in replay)),
                kind.value,
            )
        )
    return table(headers, rows)


def reasons(partitions: Sequence[PartitionRestart]) -> list[str]:
    """Each partition's reason when they are few; else each kind once, with one example."""
    if len(partitions) <= ROW_PER_PARTITION:
        return [
            f"{each.topic} partition {each.partition} restarts at "
            f"{_position(each.restart_offset)}: {each.reason}."
            for each in partitions
            if each.restart_offset is not None
        ] + [
            f"{each.topic} partition {each.partition}: {each.reason}."
            for each in partitions
            if each.restart_offset is None
        ]
    lines = ["Why, by kind (--json has every partition's own reason):"]
    for kind in RestartKind:
        members = [each for each in partitions if each.kind is kind]
        if not members:
            continue
        first = members[0]
        lines.append(
            f"  {kind.value}: {len(members)} partition(s), {KIND_DESCRIPTIONS[kind]}. For "
            f"example {first.topic} partition {first.partition}: {first.reason}."
        )
    return lines


def _estimates(plan: UpgradePlan) -> list[str]:
    total = plan.records_to_replay
    lines = [
        "Records to replay: unknown until the broker resolves where new partitions start."
        if total is None
        else f"Records to replay: {total}."
    ]
    scans = [each.replay_scan for each in plan.partitions if each.replay_scan is not None]
    feeding = known_total(scan.feeding_records for scan in scans)
    if feeding:
        replayed = sum(scan.replayed_records for scan in scans)
        batch_level = sum(scan.scanned_records for scan in scans)
        lines.append(
            f"Replayed records / records that feed open windows: {replayed / feeding:.3f} "
            f"(batch level: {batch_level / feeding:.3f})."
        )
    lost = sum(each.lost_records for each in plan.partitions)
    if lost:
        lines.append(f"Data loss accepted: {lost} records deleted by retention are not replayed.")
    lines.append(_late(plan))
    return lines


def _late(plan: UpgradePlan) -> str:
    cut = plan.late_before_event_ms
    if not plan.scanned:
        return "Late records: not counted (--no-scan)." + (
            ""
            if cut is None
            else f" Records after the old generation's end offsets with event times before "
            f"{when(cut)} will be dropped as late."
        )
    waiting = [each.waiting_scan for each in plan.partitions if each.waiting_scan is not None]
    _, by_window_end = late_threshold(plan.replay_filter, _new_window(plan))
    return explain_late(
        cut,
        by_window_end,
        sum(scan.scanned_records for scan in waiting),
        sum(scan.late_records for scan in waiting),
        sum(scan.unsure_records for scan in waiting),
    )


def _new_window(plan: UpgradePlan) -> WindowSpec:
    """The new generation's window; a plan of an earlier version names only the old one."""
    return plan.window if plan.to_signature is None else plan.to_signature.window


def _position(offset: int | None) -> str:
    if offset is None:
        return "-"
    return {EARLIEST: "earliest", -1: "latest"}.get(offset, str(offset))


def _spread(offsets: Sequence[int | None]) -> str:
    known = [offset for offset in offsets if offset is not None and offset >= 0]
    if len(known) != len(offsets):
        shown = {_position(offset) for offset in offsets}
        return shown.pop() if len(shown) == 1 else "mixed"
    low, high = min(known), max(known)
    return str(low) if low == high else f"{low}-{high}"


def _count(count: int | None) -> str:
    return "?" if count is None else str(count)


def writes_to(plan: UpgradePlan, layout: GenerationLayout) -> str:
    """Where the new generation writes, as its signature records it: its own directory, or
    the table every generation shares (a plan without a signature: the layout's directory)."""
    signature = plan.to_signature
    return signature.sink_path if signature is not None and signature.sink_path else layout.output
