"""Plans and ledgers to draw: the picture's tests share them."""

from __future__ import annotations

import dataclasses

from pyspark_kafka_upgrade.model.history import BatchFacts
from pyspark_kafka_upgrade.model.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade.model.restart import RestartKind
from pyspark_kafka_upgrade.model.scans import WaitingScan
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
