"""The picture's words: the lines under its title, the summary, the image's metadata."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.values.offsets import format_offsets, unflatten
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.words import describe_window, watermark_text, when


def clock(ms: int) -> str:
    """An event time on a panel, where the axis gives the day: hours to seconds, UTC."""
    try:
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} ms"
    return moment.strftime("%H:%M:%S")


def plan_lines(plan: UpgradePlan, t_min: int, batches: int) -> tuple[str, ...]:
    restart = (
        "no committed batch can feed an open window"
        if plan.restart_batch is None
        else f"batch {plan.restart_batch} is the first that can feed one"
    )
    replay = plan.records_to_replay
    late = plan.late_records
    cut = (
        f"W = {watermark_text(plan.watermark_ms)} (batch {plan.last_committed_batch}): "
        f"windows ending at or before W are written. Open windows hold events from "
        f"T_min = {when(t_min)} on; {restart}."
        if plan.watermark_ms > 0
        else f"W = not yet set (batch {plan.last_committed_batch}): no window was written, "
        f"so every event read can feed an open window; {restart}."
    )
    lines = [
        cut,
        f"{describe_window(plan.window)}. Replay filter: {plan.replay_filter.explain()}. "
        f"Records to replay: {'unknown' if replay is None else replay}; late records "
        f"dropped: {'not counted' if late is None else late}.",
    ]
    if plan.window_changed:
        split = plan.replay_filter.event_time_from_ms or 0
        shown = ", ".join(_span(start, end) for start, end in _open_at(split, plan.window))
        lines.append(
            "The window spec changes: the new generation counts the events from "
            f"E = {when(split)} on, in its own windows. The old windows open at E ({shown}) "
            "are written by neither generation: a dashboard of the old windows shows a gap "
            "there."
        )
    if batches == 0:
        lines.append("The ledger holds no batch of the old generation: offsets only.")
    return tuple(lines)


def _open_at(split_ms: int, window: WindowSpec) -> list[tuple[int, int]]:
    """The old grid's windows that hold E or start there: neither generation writes them."""
    size, slide = window.duration_ms, window.slide_ms
    first = (split_ms - size) // slide + 1
    return [(k * slide, k * slide + size) for k in range(first, split_ms // slide + 1)]


def _span(start_ms: int, end_ms: int) -> str:
    """``10:30-10:40``; with seconds when a window has them."""
    start, end = clock(start_ms), clock(end_ms)
    if start.endswith(":00") and end.endswith(":00"):
        start, end = start[:-3], end[:-3]
    return f"{start}-{end}"


def summary_text(plan: UpgradePlan, chosen: Sequence[PartitionRestart]) -> str:
    counts = sorted(
        p.records_to_replay
        for p in plan.partitions
        if p.subscribed and p.records_to_replay is not None
    )
    rest = len(plan.partitions) - len(chosen)
    spread = f"median {counts[len(counts) // 2]}, max {counts[-1]}" if counts else "none replays"
    kinds: dict[str, int] = {}
    for p in plan.partitions:
        kinds[p.kind.value] = kinds.get(p.kind.value, 0) + 1
    by_kind = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    return (
        f"{len(plan.partitions)} partitions, {rest} not drawn above. Records to replay per "
        f"partition: {spread}. Restarts: {by_kind}."
    )


def metadata_of(plan: UpgradePlan) -> dict[str, str]:
    """The plan's offsets, in the image itself, so a picture can be checked against a plan."""
    return {
        "Title": f"upgrade plan {plan.pipeline} {plan.from_generation}->{plan.to_generation}",
        "Description": json.dumps(
            {
                "restart_offsets": plan.starting_offsets,
                "old_end_offsets": format_offsets(unflatten(plan.old_end_offsets)),
                "watermark_ms": plan.watermark_ms,
                "replay_filter": plan.replay_filter.describe(),
            },
            sort_keys=True,
        ),
    }
