"""Has the world moved since a plan was made? Each difference, as one line a reviewer reads.

`apply PLAN` applies exactly the plan that was reviewed, so it first gathers the facts again
and compares what the plan rests on: the old generation and its last committed batch, where
its quarantine stopped, both signatures, the subscribed partitions, the offsets the broker
still holds, and the generation number the plan takes. Records read by the plan's scans are
not read again: offsets never change meaning, and the old generation committed nothing new,
or this would say so.
"""

from __future__ import annotations

from .advisor import advise, show_value
from .decide import align, quarantine_start
from .facts import UpgradeFacts
from .history import FlatOffsets
from .plan import UpgradePlan
from .signature import signature_digest
from .words import when


def what_moved(plan: UpgradePlan, facts: UpgradeFacts) -> list[str]:
    """What differs between ``plan`` and the world ``facts`` describe; empty: nothing moved."""
    moved: list[str] = []
    if facts.old_generation != plan.from_generation:
        moved.append(
            f"the current generation is {facts.old_generation}, the plan moves on from "
            f"generation {plan.from_generation}"
        )
        return moved  # nothing else compares across generations
    last = facts.checkpoint.last_committed_batch
    if last != plan.last_committed_batch:
        moved.append(
            f"generation {plan.from_generation} committed up to batch {last} since the plan, "
            f"which was made after batch {plan.last_committed_batch}"
        )
    elif facts.checkpoint.watermark_ms not in (None, plan.watermark_ms):
        moved.append(
            f"the checkpoint gives W = {when(facts.checkpoint.watermark_ms or 0)}, the plan "
            f"{when(plan.watermark_ms)}"
        )
    if signature_digest(facts.old_signature) != plan.from_signature:
        moved.append(
            f"the signature generation {plan.from_generation} recorded changed since the plan "
            f"({plan.from_signature}, now {signature_digest(facts.old_signature)}): it ran again"
        )
    changes = advise(plan.to_signature.to_json(), facts.new_signature.to_json()).changes
    if changes:
        listed = "; ".join(
            f"{change.path}: {show_value(change.old)} -> {show_value(change.new)}"
            for change in changes
        )
        moved.append(f"the code or settings changed since the plan: {listed}")
    moved += _partitions_moved(plan, facts)
    moved += _quarantine_moved(plan, facts)
    if facts.next_generation != plan.to_generation:
        moved.append(
            f"generation {plan.to_generation} was taken by another plan since; the next "
            f"free number is {facts.next_generation}"
        )
    return moved


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
    # The plan's own restart offsets stand in for the aggregates' fallback: they are what
    # the facts gave when it was made, and the other checks catch any change to those.
    start = quarantine_start(plan.restart_offsets, facts)
    now: FlatOffsets = align(start, facts.broker.subscribed, facts.new_partition_position)
    planned = plan.quarantine_offsets
    differ = sorted(key for key in planned.keys() & now.keys() if planned[key] != now[key])
    if not differ:
        return []
    listed = ", ".join(f"{t}:{p} {planned[(t, p)]} -> {now[(t, p)]}" for t, p in differ)
    return [f"the old quarantine query committed more since the plan ({listed})"]
