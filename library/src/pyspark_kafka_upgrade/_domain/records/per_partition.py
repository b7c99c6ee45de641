"""What a record made of one part per partition works out from its parts.

A plan or a scan summary holds its ``partitions``; its totals and its offsets by partition
are read from them whenever asked, never stored beside them, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey

_Value = TypeVar("_Value")


class _Partitioned(Protocol):
    @property
    def partitions(self) -> Sequence[Any]: ...


class PartitionTotal:
    """A record's count: the sum of its partitions' counts of the same name, or of ``count``."""

    __slots__ = ("count",)

    def __init__(self, count: str = "") -> None:
        self.count = count

    def __set_name__(self, owner: type, name: str) -> None:
        self.count = self.count or name

    def __get__(self, record: _Partitioned, owner: object = None) -> int:
        return sum(getattr(part, self.count) for part in record.partitions)


class ByPartition(Generic[_Value]):
    """A record's mapping of each partition to that partition's ``value``."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __get__(self, record: _Partitioned, owner: object = None) -> dict[PartitionKey, _Value]:
        return {part.partition: getattr(part, self.value) for part in record.partitions}


def known_total(counts: Iterable[int | None]) -> int | None:
    """The sum of ``counts``; None while any of them is unknown (None)."""
    listed = list(counts)
    return None if None in listed else sum(count or 0 for count in listed)
