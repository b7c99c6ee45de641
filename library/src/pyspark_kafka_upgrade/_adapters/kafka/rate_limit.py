"""Split a batch's record budget (maxOffsetsPerTrigger) across partitions.

The arithmetic of Spark's built-in Kafka source, so both connectors cut batches alike: each
partition gets a share proportional to its backlog, rounded down, except that a share below
one record rounds up so that no partition with a backlog starves. The total can therefore
exceed the budget by up to the number of partitions, as with the built-in source.
Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def limit_end_offsets(
    max_records: int, start: Mapping[K, int], end: Mapping[K, int]
) -> dict[K, int]:
    """The end offsets of a batch that reads about ``max_records`` from ``start`` to ``end``.

    ``start`` must name every partition of ``end``. A partition whose end is not after its
    start keeps its end: that is data loss, for the caller to report, not a backlog.
    """
    if max_records <= 0:
        raise ValueError(f"max_records must be positive, got {max_records}")
    backlog = {key: end[key] - start[key] for key in end if end[key] > start[key]}
    total = sum(backlog.values())
    if total == 0:
        return dict(end)
    limited = dict(end)
    for key, size in backlog.items():
        # Evaluated as the built-in does (limit * (size / total)), so ties round alike.
        share = max_records * (size / total)
        records = math.ceil(share) if share < 1 else math.floor(share)
        limited[key] = min(end[key], start[key] + records)
    return limited
