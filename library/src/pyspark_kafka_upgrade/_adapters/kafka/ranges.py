"""What one micro-batch reads: an offset range per partition, with data loss found on the way."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pyspark_kafka_upgrade._domain.values.offsets import Offsets, PartitionKey, flatten


@dataclass(frozen=True)
class OffsetRange:
    """Records ``start`` (inclusive) to ``end`` (exclusive) of one partition.

    Without Spark: `upgrade plan` reads these ranges too, and must not wait for pyspark's
    import. The source gives Spark a :class:`~pykafka.RangePartition`, one task each.
    """

    topic: str
    partition: int
    start: int
    end: int


def plan_ranges(
    start: Offsets,
    end: Offsets,
    earliest: Callable[[Iterable[PartitionKey]], Mapping[PartitionKey, int]],
    report_data_loss: Callable[[str], None],
) -> list[OffsetRange]:
    """The non-empty ranges from ``start`` to ``end``, as the built-in source plans them.

    A partition that is only in ``end`` was added after ``start`` and is read from its
    earliest offset. ``earliest`` looks those up; ``report_data_loss`` either raises or
    logs, and planning continues with what is still there.
    """
    begin = flatten(start)
    until = flatten(end)
    added = [key for key in until if key not in begin]
    added_earliest = earliest(added) if added else {}
    for topic, partition in added:
        if (topic, partition) not in added_earliest:
            report_data_loss(
                f"cannot find the earliest offset of the added topic {topic!r} partition "
                f"{partition}: it was deleted"
            )
        elif added_earliest[(topic, partition)] != 0:
            report_data_loss(
                f"added topic {topic!r} partition {partition} starts from offset "
                f"{added_earliest[(topic, partition)]} instead of 0"
            )
    for topic, partition in sorted(begin.keys() - until.keys()):
        report_data_loss(
            f"topic {topic!r} partition {partition} is gone (it was at offset "
            f"{begin[(topic, partition)]}); the topic was deleted or has fewer partitions"
        )
    ranges = []
    for key, until_offset in until.items():
        from_offset = begin.get(key, added_earliest.get(key))
        if from_offset is None:
            continue
        topic, partition = key
        if until_offset < from_offset:
            report_data_loss(
                f"topic {topic!r} partition {partition}'s offset was changed from {from_offset} "
                f"to {until_offset}: the partition now ends before the offset to read next"
            )
        elif until_offset > from_offset:
            ranges.append(OffsetRange(topic, partition, from_offset, until_offset))
    return ranges
