"""Has the world moved since a plan was made? Each difference, as one line a reviewer reads.

`apply PLAN` applies exactly the plan that was reviewed, so it first gathers the facts again
and compares what the plan rests on: the old generation, its last committed batch and its
sink log, where its quarantine stopped, both signatures, how records are parsed, the
subscribed partitions, the offsets the broker still holds, and the generation number the
plan takes (``what_moved``); then W and the replay filter the facts give now
(``level_moved``). Records read by the plan's scans are not read again: offsets never change
meaning, and the old generation committed nothing new, or this would say so.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark_kafka_upgrade._core.planner.advisor import advise
from pyspark_kafka_upgrade._core.planner.decide import BatchLevel, align, quarantine_start
from pyspark_kafka_upgrade._domain.records.advice import show_value
from pyspark_kafka_upgrade._domain.records.facts import UpgradeFacts
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.values.words import when


def what_moved(plan: UpgradePlan, facts: UpgradeFacts) -> list[str]:
    """What differs between ``plan`` and the world ``facts`` describe; empty: nothing moved."""
    if facts.old_generation != plan.from_generation:
        # Nothing else compares across generations.
        return [
            f"the current generation is {facts.old_generation}, the plan moves on from "
            f"generation {plan.from_generation}"
        ]
    if plan.to_signature is None:
        return ["the plan was made by an earlier version of the pipeline and names no signature"]
    moved = _old_generation_moved(plan, facts)
    # The generation number is a check of its own: compare the code and settings on the
    # directories the plan names, so a number taken meanwhile adds no sink.path line.
    now = replace(facts.new_signature, sink_path=plan.to_signature.sink_path)
    changes = advise(plan.to_signature.to_json(), now.to_json()).changes
    if changes:
        listed = "; ".join(
            f"{change.path}: {show_value(change.old)} -> {show_value(change.new)}"
            for change in changes
        )
        moved.append(f"the code or settings changed since the plan: {listed}")
    if facts.parser_digest != plan.parser_digest:
        moved.append(
            "how records are parsed changed since the plan (events.max_value_bytes, the time "
            "settings, the project's events or the Spark version): which records are "
            "malformed, and so where the replay starts, may differ"
        )
    moved += _partitions_moved(plan, facts)
    if plan.handoff is None:
        moved += _quarantine_moved(plan, facts)
    if facts.next_generation != plan.to_generation:
        moved.append(
            f"generation {plan.to_generation} was taken by another plan since; the next "
            f"free number is {facts.next_generation}"
        )
    return moved


def level_moved(plan: UpgradePlan, level: BatchLevel) -> list[str]:
    """W and the replay filter the facts give now, against the plan's."""
    watermark_ms, replay_filter = level.restart.watermark_ms, level.replay_filter
    return _those_moved(
        (
            watermark_ms != plan.watermark_ms,
            f"the facts now give W = {when(watermark_ms)}, the plan {when(plan.watermark_ms)}",
        ),
        (
            replay_filter != plan.replay_filter,
            f"the replay filter would now be {replay_filter.describe()}, the plan's is "
            f"{plan.replay_filter.describe()}",
        ),
    )


def _old_generation_moved(plan: UpgradePlan, facts: UpgradeFacts) -> list[str]:
    generation = plan.from_generation
    last = facts.checkpoint.last_committed_batch
    sink = facts.sink_last_batch
    recorded = facts.old_signature_digest
    # In a handoff the old generation runs on by design: C still ahead of its watermark is
    # ``level_moved``'s check, and its quarantine stops where it is when it takes C.
    running = plan.handoff is not None
    return _those_moved(
        (
            not running and last != plan.last_committed_batch,
            f"generation {generation} committed up to batch {last} since the plan, which was "
            f"made after batch {plan.last_committed_batch}",
        ),
        (
            not running and sink is not None and sink > plan.last_committed_batch,
            f"generation {generation}'s output holds batch {sink}, which the plan's checkpoint "
            "never committed: a run was killed mid-commit since the plan",
        ),
        (
            recorded != plan.from_signature,
            f"the signature generation {generation} recorded changed since the plan "
            f"({plan.from_signature}, now {recorded}): it ran again",
        ),
    )


def _those_moved(*checks: tuple[bool, str]) -> list[str]:
    """The line of each check that found a difference, in the order given."""
    return [line for moved, line in checks if moved]


def _partitions_moved(plan: UpgradePlan, facts: UpgradeFacts) -> list[str]:
    moved = []
    planned = set(plan.restart_offsets)
    subscribed = set(facts.broker.subscribed)
    if planned != subscribed:
        added = ", ".join(f"{t}:{p}" for t, p in sorted(subscribed - planned)) or "none"
        gone = ", ".join(f"{t}:{p}" for t, p in sorted(planned - subscribed)) or "none"
        moved.append(
            f"the subscribed partitions changed since the plan (new: {added}; gone: {gone})"
        )
    for key, offset in sorted(plan.restart_offsets.items()):
        earliest = facts.broker.earliest.get(key)
        if offset >= 0 and earliest is not None and earliest > offset:
            moved.append(
                f"{key[0]} partition {key[1]}: offsets {offset}-{earliest - 1} that the plan "
                "replays were deleted by retention since"
            )
    return moved


def _quarantine_moved(plan: UpgradePlan, facts: UpgradeFacts) -> list[str]:
    """Where the new queries would start partitions now, against the plan's offsets.

    The plan's own restart offsets stand in for the aggregates' fallback: they are what the
    facts gave when it was made, and the other checks catch any change to those.
    """
    read = frozenset(p.topic for p in plan.partitions if p.old_end_offset is not None)
    subscribed, position = facts.broker.subscribed, facts.new_partition_position
    now = align(quarantine_start(plan.restart_offsets, facts), subscribed, position, read)
    planned = plan.quarantine_offsets
    differ = sorted(key for key in planned.keys() & now.keys() if planned[key] != now[key])
    committed = [key for key in differ if key in (facts.quarantine_offsets or {})]
    moved = []
    if committed:
        listed = ", ".join(f"{t}:{p} {planned[(t, p)]} -> {now[(t, p)]}" for t, p in committed)
        moved.append(f"the old quarantine query committed more since the plan ({listed})")
    starts = {
        p.key: p.restart_offset
        for p in plan.partitions
        if p.old_end_offset is None and p.restart_offset is not None
    }
    positions = align({}, tuple(starts), position, read)
    changed = sorted(key for key in starts if starts[key] != positions[key])
    if changed or (differ and not committed):
        moved.append(
            "kafka.starting_offsets changed since the plan: partitions the old generation "
            f"never read would start at {position}, the plan starts them as reviewed"
        )
    return moved
