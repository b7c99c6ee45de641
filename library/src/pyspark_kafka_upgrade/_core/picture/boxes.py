"""A partition's committed batches as the boxes of its panel: offsets across, event times up."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark_kafka_upgrade._domain.records.history import BatchFacts
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey


@dataclass(frozen=True, slots=True)
class BatchBox:
    """One committed batch (or a run of neighbouring ones) in one partition."""

    first_batch: int
    last_batch: int
    start_offset: int
    end_offset: int
    min_event_ms: int | None  # None: no valid event (or, merged, none recorded)
    max_event_ms: int | None
    can_feed_open: bool  # its latest event time is at or after T_min

    @property
    def label(self) -> str:
        if self.first_batch == self.last_batch:
            return f"batch {self.first_batch}"
        return f"batches {self.first_batch}-{self.last_batch}"

    @property
    def eventless(self) -> bool:
        """No event time to draw it at: it read malformed records only (or, merged, the
        ledger recorded none)."""
        return self.min_event_ms is None or self.max_event_ms is None


# A panel draws at most this many boxes; beyond, neighbouring batches share one.
MAX_BOXES = 40
# Written batches drawn before the first one the replay reads, for context.
CONTEXT_BATCHES = 2


def batch_boxes(
    restart: PartitionRestart,
    batches: Sequence[BatchFacts],
    initial: Mapping[PartitionKey, int],
    t_min: int,
) -> tuple[BatchBox, ...]:
    """The batches that read this partition, from a little before the restart to the end."""
    key = restart.key
    boxes: list[BatchBox] = []
    previous_end = initial.get(key)
    for batch in batches:
        end = batch.end_offsets.get(key)
        start = previous_end if batch.start_offsets is None else batch.start_offsets.get(key)
        start = previous_end if start is None else start
        previous_end = end if end is not None else previous_end
        if start is None or end is None or end <= start:
            continue
        top = batch.max_event_time_ms
        boxes.append(
            BatchBox(
                first_batch=batch.batch_id,
                last_batch=batch.batch_id,
                start_offset=start,
                end_offset=end,
                min_event_ms=batch.min_event_time_ms,
                max_event_ms=top,
                can_feed_open=top is not None and top >= t_min,
            )
        )
    boundary = restart.restart_offset
    if boundary is not None and boundary >= 0:
        first_read = next(
            (i for i, box in enumerate(boxes) if box.end_offset > boundary), len(boxes)
        )
        boxes = boxes[max(0, first_read - CONTEXT_BATCHES) :]
    return _merged(boxes)


def _merged(boxes: list[BatchBox]) -> tuple[BatchBox, ...]:
    """At most MAX_BOXES boxes: neighbouring batches share one when there are more."""
    if len(boxes) <= MAX_BOXES:
        return tuple(boxes)
    size = math.ceil(len(boxes) / MAX_BOXES)
    merged = []
    for i in range(0, len(boxes), size):
        group = boxes[i : i + size]
        lows = [box.min_event_ms for box in group if box.min_event_ms is not None]
        highs = [box.max_event_ms for box in group if box.max_event_ms is not None]
        merged.append(
            BatchBox(
                first_batch=group[0].first_batch,
                last_batch=group[-1].last_batch,
                start_offset=group[0].start_offset,
                end_offset=group[-1].end_offset,
                min_event_ms=min(lows) if lows else None,
                max_event_ms=max(highs) if highs else None,
                can_feed_open=any(box.can_feed_open for box in group),
            )
        )
    return tuple(merged)
