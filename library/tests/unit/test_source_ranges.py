from collections.abc import Callable, Iterable, Mapping

import pytest

from pyspark_kafka_upgrade._adapters.kafka.ranges import (
    OffsetRange,
    plan_ranges,
)
from pyspark_kafka_upgrade._domain.values.offsets import (
    PartitionKey,
)


def earliest_of(
    known: Mapping[PartitionKey, int],
) -> Callable[[Iterable[PartitionKey]], dict[PartitionKey, int]]:
    def earliest(keys: Iterable[PartitionKey]) -> dict[PartitionKey, int]:
        return {key: known[key] for key in keys if key in known}

    return earliest


def plan(
    start: dict[str, dict[int, int]],
    end: dict[str, dict[int, int]],
    earliest: Mapping[PartitionKey, int] | None = None,
) -> tuple[list[OffsetRange], list[str]]:
    losses: list[str] = []
    ranges = plan_ranges(start, end, earliest_of(earliest or {}), losses.append)
    return ranges, losses


def test_one_range_per_partition_with_records() -> None:
    ranges, losses = plan({"t": {0: 5, 1: 7}}, {"t": {0: 9, 1: 7}})
    assert ranges == [OffsetRange("t", 0, 5, 9)]
    assert losses == []


def test_a_partition_added_later_starts_at_its_earliest_offset() -> None:
    ranges, losses = plan({"t": {0: 5}}, {"t": {0: 5, 1: 3}}, earliest={("t", 1): 0})
    assert ranges == [OffsetRange("t", 1, 0, 3)]
    assert losses == []


@pytest.mark.parametrize(
    ("start", "end", "earliest", "loss"),
    [
        ({"t": {0: 5}}, {"t": {0: 5, 1: 3}}, {("t", 1): 2}, "starts from offset 2 instead of 0"),
        ({"t": {0: 5}}, {"t": {0: 5, 1: 3}}, {}, "cannot find the earliest offset"),
        ({"t": {0: 5, 1: 4}}, {"t": {0: 5}}, {}, "topic 't' partition 1 is gone"),
        ({"t": {0: 50}}, {"t": {0: 5}}, {}, "offset was changed from 50 to 5"),
    ],
)
def test_data_loss_is_reported_and_the_rest_is_planned(
    start: dict[str, dict[int, int]],
    end: dict[str, dict[int, int]],
    earliest: dict[PartitionKey, int],
    loss: str,
) -> None:
    ranges, losses = plan(start, end, earliest)
    assert len(losses) == 1 and loss in losses[0]
    assert all(r.end > r.start for r in ranges)
