"""Plans and ledgers to draw: the picture's tests share them."""

from __future__ import annotations

import dataclasses

from pyspark_kafka_upgrade._domain.records.history import BatchFacts
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from pyspark_kafka_upgrade._domain.records.scans import WaitingScan
from support.plans import sample_plan

MINUTE = 60_000
PLAN = sample_plan()  # one partition, restart 20, old end 40, tumbling 10 minutes
W = PLAN.watermark_ms  # 10:24:00: windows to 10:20 written, 10:20-10:30 open
T_MIN = W - 4 * MINUTE


def batch(
    number: int,
    start: int | None,
    end: int,
    low: int | None,
    high: int | None,
    partitions: int = 1,
) -> BatchFacts:
    """One batch that read [start, end) of each of ``partitions`` partitions of topic t."""
    return BatchFacts(
        number,
        None if start is None else {("t", p): start for p in range(partitions)},
        {("t", p): end for p in range(partitions)},
        W,
        low,
        high,
    )


BATCHES = [
    batch(0, None, 10, T_MIN - 30 * MINUTE, T_MIN - 21 * MINUTE),
    batch(1, 10, 20, T_MIN - 20 * MINUTE, T_MIN - 11 * MINUTE),
    batch(2, 20, 30, T_MIN - 10 * MINUTE, T_MIN - 1),
    batch(3, 30, 40, T_MIN - 1, W + 5 * MINUTE),
]


def batches_of(partitions: int) -> list[BatchFacts]:
    """BATCHES, read from every one of ``partitions`` partitions."""
    return [
        batch(
            b.batch_id,
            None if b.start_offsets is None else b.start_offsets[("t", 0)],
            b.end_offsets[("t", 0)],
            b.min_event_time_ms,
            b.max_event_time_ms,
            partitions,
        )
        for b in BATCHES
    ]


def two_hundred_partitions() -> UpgradePlan:
    partitions = tuple(
        PartitionRestart(
            "t",
            number,
            20,
            20,
            40 + (number == 7) * 100,  # partition 7 replays most
            RestartKind.FIRST_FEEDING_RECORD,
            "because",
            lost_records=5 if number == 150 else 0,
            waiting_scan=WaitingScan(("t", number), 40, 50, 10, 0, 0, 3 if number == 99 else 0),
        )
        for number in range(200)
    )
    return dataclasses.replace(PLAN, partitions=partitions)


# The demo's plan (demo/upgrade_demo.py): 2 partitions, batches of 20 offsets from 10:00, one
# event every 40 s in each; batch 3 read the 2 malformed records only. W = 10:34:40, restart
# 45, old end 61.
DEMO_BASE = 1_763_805_600_000  # 2025-11-22T10:00:00Z
DEMO_W = DEMO_BASE + 34 * MINUTE + 40_000
DEMO_REASON = (
    "offset 45 holds the first record at or after offset 40 whose event time can fall in a "
    "window ending after W (batch level: batch 2 is the first whose events (max "
    "2025-11-22T10:39:40Z) can fall in a window ending after W=2025-11-22T10:34:40Z; it "
    "started reading this partition at offset 40)"
)
DEMO_BATCHES = [
    batch(0, None, 20, DEMO_BASE, DEMO_BASE + 13 * MINUTE, partitions=2),
    batch(1, 20, 40, DEMO_BASE + 13 * MINUTE + 20_000, DEMO_BASE + 26 * MINUTE, partitions=2),
    batch(2, 40, 60, DEMO_BASE + 26 * MINUTE + 40_000, DEMO_BASE + 39 * MINUTE + 40_000, 2),
    batch(3, 60, 61, None, None, partitions=2),
]


def demo_plan(waiting: int = 0, late: int = 0) -> UpgradePlan:
    """The demo's plan; ``waiting`` records after the old end, ``late`` of them late."""
    partitions = tuple(
        PartitionRestart(
            "t",
            number,
            45,
            61,
            61,
            RestartKind.FIRST_FEEDING_RECORD,
            DEMO_REASON,
            waiting_scan=WaitingScan(("t", number), 61, 61 + waiting, waiting, 0, 0, late)
            if waiting
            else None,
        )
        for number in range(2)
    )
    return dataclasses.replace(
        PLAN,
        watermark_ms=DEMO_W,
        replay_filter=ReplayFilter(window_end_after_ms=DEMO_W),
        partitions=partitions,
    )


def window_change_demo() -> UpgradePlan:
    """The demo's plan with records waiting, after a window change: E beside W and T_min."""
    return dataclasses.replace(
        demo_plan(waiting=14, late=3),
        replay_filter=ReplayFilter(event_time_from_ms=DEMO_W - 4 * MINUTE - 40_000),
    )


# Plans whose pictures crowd their labels in different ways: the demo's (a batch of malformed
# records only, right at the old end), with records waiting after it, a window change, and
# many partitions. The layout's tests add their own to these.
CROWDED_PLANS: dict[str, tuple[UpgradePlan, list[BatchFacts]]] = {
    "demo": (demo_plan(), DEMO_BATCHES),
    "demo-waiting": (demo_plan(waiting=14, late=3), DEMO_BATCHES),
    "window-change": (window_change_demo(), DEMO_BATCHES),
    "two-hundred": (two_hundred_partitions(), batches_of(200)),
}
