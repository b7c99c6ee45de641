"""What a record made of one part per partition works out from its parts: totals, values by
partition, and a total that is unknown while a part's is."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark_kafka_upgrade._domain.records.per_partition import (
    ByPartition,
    PartitionTotal,
    known_total,
)
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey


@dataclass(frozen=True, slots=True)
class Part:
    partition: PartitionKey
    records: int
    start: int


@dataclass(frozen=True, slots=True)
class Whole:
    partitions: tuple[Part, ...]

    records = PartitionTotal()
    starts_summed = PartitionTotal("start")
    starts = ByPartition[int]("start")


WHOLE = Whole((Part(("t", 0), 3, 10), Part(("t", 1), 4, 20)))


def test_a_total_sums_the_parts_count_of_its_own_name_or_the_one_it_names() -> None:
    assert (WHOLE.records, WHOLE.starts_summed) == (7, 30)
    assert Whole(()).records == 0


def test_a_value_by_partition_maps_each_part_to_its_value() -> None:
    assert WHOLE.starts == {("t", 0): 10, ("t", 1): 20}


def test_a_known_total_is_unknown_while_any_count_is() -> None:
    assert known_total([1, 2, 0]) == 3
    assert known_total(iter([1, None])) is None
    assert known_total([]) == 0
