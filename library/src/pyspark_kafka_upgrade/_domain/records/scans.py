"""What the upgrade's scans of Kafka records found, per partition.

The tightening scan reads each partition's batch-level replay range (``PartitionScan``); the
waiting scan reads what arrived after the old generation's end (``WaitingScan``). A record's
event time is ms, None for a malformed record, or :data:`UNSURE` when only Spark could tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from pyspark_kafka_upgrade._domain.records.per_partition import PartitionTotal, known_total
from pyspark_kafka_upgrade._domain.values.json_record import (
    Fields,
    JsonRecord,
    Shape,
    Spread,
    Written,
)
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey


class Unsure:
    """The mirror cannot be sure what Spark gives for this record."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSURE"


UNSURE: Final = Unsure()


# A record's event time as a scan reports it: ms floored, None for a malformed record, or
# Unsure when it cannot be judged without Spark.
EventTime = int | None | Unsure


Record = tuple[int, EventTime]
# Consecutive records of one partition: their offsets, and their event times in that order.
RecordBatch = tuple[Sequence[int], Sequence[EventTime]]


# A partition's key as documents write it: its topic and its number, each under its own key.
PARTITION_KEYS = Spread("partition", "topic", "partition")


# For one partition and a half-open offset range [start, end): its records, in offset order.
Scan = Callable[[PartitionKey, int, int], Iterable[Record]]


@dataclass(frozen=True, slots=True)
class ScanRange:
    """One partition's records to read: offsets [start, end)."""

    partition: PartitionKey
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class PartitionScan(JsonRecord):
    """What a scan of one partition's batch-level replay range found."""

    json_shape = Shape(PARTITION_KEYS, Fields())

    partition: PartitionKey
    batch_level_offset: int
    tightened_offset: int
    end_offset: int
    scanned_records: int  # records in [batch_level_offset, end_offset)
    malformed_records: int
    replayed_records: int  # records in [tightened_offset, end_offset)
    # Records whose event time is >= T_min, unsure ones included; None: the scan stopped at
    # the first one (``count_feeding=False``).
    feeding_records: int | None
    unsure_records: int = 0  # records the scan could not judge without Spark: taken as feeding

    @property
    def first_feeding_offset(self) -> int | None:
        return None if self.tightened_offset >= self.end_offset else self.tightened_offset


@dataclass(frozen=True, slots=True)
class TighteningSummary(JsonRecord):
    """Replay amplification before and after the per-partition scan."""

    json_shape = Shape(
        Written("batch_level_records"),
        Written("replayed_records"),
        Written("feeding_records"),
        Written("amplification"),
        Written("batch_level_amplification"),
        "partitions",
    )

    partitions: tuple[PartitionScan, ...]

    batch_level_records = PartitionTotal("scanned_records")
    replayed_records = PartitionTotal()

    @property
    def feeding_records(self) -> int | None:
        return known_total(scan.feeding_records for scan in self.partitions)

    @property
    def amplification(self) -> float | None:
        """Replayed records / records that truly feed open windows (1.0 is the minimum)."""
        return _ratio(self.replayed_records, self.feeding_records)

    @property
    def batch_level_amplification(self) -> float | None:
        return _ratio(self.batch_level_records, self.feeding_records)


def _ratio(numerator: int, denominator: int | None) -> float | None:
    if denominator is None or denominator == 0:
        return None
    return numerator / denominator


@dataclass(frozen=True, slots=True)
class WaitingScan(JsonRecord):
    """One partition's records waiting after the old generation's end, as a scan found them.

    Its document leaves the partition out: the partition it is part of names it.
    """

    json_shape = Shape(
        "start_offset",
        "end_offset",
        "scanned_records",
        "malformed_records",
        "unsure_records",
        "late_records",
    )

    partition: PartitionKey
    start_offset: int  # the old generation's end offset (for a new partition, where it starts)
    end_offset: int  # the latest offset when the plan was made
    scanned_records: int
    malformed_records: int  # never late: they go to the quarantine
    unsure_records: int  # could not be judged without Spark: not counted as late
    late_records: int
