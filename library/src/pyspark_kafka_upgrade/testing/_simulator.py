"""A pure-Python model of Spark's append-mode, event-time windowed count per (window, key).

It follows the rules measured on Spark 4 (see FACTS, "Structured Streaming semantics"), so
property tests can check the upgrade planner against it without a JVM:

- A query's first batch runs with watermark 0. After each batch, the next batch's watermark
  is max(this batch's watermark, max event time seen so far - delay): it never decreases.
- A batch drops an (event, window) pair as late when ``window.end <=`` the PREVIOUS batch's
  watermark (a query's first batch has none before it and uses its own, as Spark does). It
  counts the other pairs into state, then writes and evicts every window whose
  ``end <=`` its OWN watermark, inclusive. So a slightly late pair accepted in a batch can be
  written in that same batch.
- With sliding windows, lateness is per pair: a late event still counts in its open windows.
- A no-data batch runs only when the source has nothing new and the watermark advanced;
  ``run_schedule`` says after which data batches the source was idle.
- ``replay_after_ms`` is the upgrade's replay filter, applied to (event, window) pairs after
  ``window()`` and before the aggregation: pairs with ``window.end <=`` it are dropped. The
  watermark still sees their events, since it is computed upstream of the filter.
- ``replay_from_event_ms`` is the upgrade's filter when the window spec changed, E: events
  whose time is before it are dropped before windowing, as ``events.where(event_time >= E)``
  does upstream of ``withWatermark``. So, unlike ``replay_after_ms``, the dropped events do
  NOT move the watermark (they never reach the watermark operator). The batch's min and max
  event times (the ledger's facts) still include them: the listener observes the parsed
  stream, before the filter.
- A malformed record (no event time) moves the offsets on but reaches no window and does
  not move the watermark.

Each written row keeps the ids of the events it counted, so tests can check "counted exactly
once" per event, not only per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# (window start, window end, key): one aggregation group.
Group = tuple[int, int, str]
# (window start, window end, key, count): one written row.
Row = tuple[int, int, str, int]


@dataclass(frozen=True, slots=True)
class Record:
    """One Kafka record; its offset is its position in its partition's list."""

    event_id: int
    time_ms: int | None  # None: malformed, quarantined, never in a window
    key: str


# partition -> its records, offsets dense from 0
Topic = Mapping[int, Sequence[Record]]


@dataclass(frozen=True, slots=True)
class Windows:
    """Windows of ``size_ms`` starting at every multiple of ``slide_ms`` (epoch-aligned)."""

    size_ms: int
    slide_ms: int
    delay_ms: int

    def __post_init__(self) -> None:
        assert 0 < self.slide_ms <= self.size_ms and self.delay_ms >= 0

    def of(self, time_ms: int) -> list[tuple[int, int]]:
        """The windows containing ``time_ms``, as (start, end), earliest first."""
        last = time_ms // self.slide_ms
        first = (time_ms - self.size_ms) // self.slide_ms + 1
        return [
            (index * self.slide_ms, index * self.slide_ms + self.size_ms)
            for index in range(first, last + 1)
        ]


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """One committed micro-batch, with what a progress event would report."""

    batch_id: int
    start_offsets: dict[int, int] | None  # None for a query's first batch
    end_offsets: dict[int, int]
    watermark_ms: int  # batchWatermarkMs
    next_watermark_ms: int  # nextBatchWatermarkMs of its commit
    records: tuple[Record, ...]
    written: tuple[Group, ...]
    dropped_late: int  # (event, window) pairs, as numRowsDroppedByWatermark counts them

    @property
    def is_no_data(self) -> bool:
        return not self.records

    @property
    def min_event_time_ms(self) -> int | None:
        times = [record.time_ms for record in self.records if record.time_ms is not None]
        return min(times) if times else None

    @property
    def max_event_time_ms(self) -> int | None:
        times = [record.time_ms for record in self.records if record.time_ms is not None]
        return max(times) if times else None


class AppendQuery:
    """One streaming query on its own checkpoint: watermark, state and written output."""

    def __init__(
        self,
        topic: Topic,
        windows: Windows,
        *,
        starting_offsets: Mapping[int, int] | None = None,
        replay_after_ms: int | None = None,
        replay_from_event_ms: int | None = None,
    ) -> None:
        self._topic = topic
        self.windows = windows
        # Where a partition starts when the query first reads it; absent: earliest, 0.
        self._starting = dict(starting_offsets or {})
        self.replay_after_ms = replay_after_ms
        self.replay_from_event_ms = replay_from_event_ms
        self._position: dict[int, int] = {}
        self._state: dict[Group, list[int]] = {}
        self.written: dict[Group, tuple[int, ...]] = {}  # event ids per written group
        self.batches: list[BatchOutcome] = []
        self._max_event_ms: int | None = None
        self._watermark_ms = 0  # what the next batch runs with
        self.filtered_pairs = 0
        self.filtered_events = 0  # dropped by replay_from_event_ms

    @property
    def no_data_batch_due(self) -> bool:
        """Whether Spark would run a no-data batch now: the watermark advanced."""
        return bool(self.batches) and self._watermark_ms > self.batches[-1].watermark_ms

    @property
    def state_groups(self) -> tuple[Group, ...]:
        return tuple(sorted(self._state))

    def held(self, group: Group) -> tuple[int, ...]:
        """The ids of the events counted into ``group``'s state, not written yet."""
        return tuple(self._state.get(group, ()))

    def run_batch(self, until: Mapping[int, int]) -> BatchOutcome:
        """A data batch reading each named partition up to (excluding) ``until[p]``."""
        start = dict(self._position) if self.batches else None
        records: list[Record] = []
        for partition, stop in sorted(until.items()):
            begin = self._position.get(partition, self._starting.get(partition, 0))
            assert begin <= stop <= len(self._topic[partition]), (partition, begin, stop)
            records.extend(self._topic[partition][begin:stop])
            self._position[partition] = stop
        return self._execute(start, records)

    def run_no_data_batch(self) -> BatchOutcome:
        return self._execute(dict(self._position), [])

    def flush(self) -> tuple[Group, ...]:
        """Write everything still in state, as a watermark beyond every window would."""
        groups = tuple(sorted(self._state))
        for group in groups:
            self.written[group] = tuple(self._state.pop(group))
        return groups

    def rows(self) -> list[Row]:
        """The written rows, sorted: a multiset comparable across runs."""
        return sorted(
            (start, end, key, len(ids)) for (start, end, key), ids in self.written.items()
        )

    def _execute(self, start: dict[int, int] | None, records: Sequence[Record]) -> BatchOutcome:
        watermark = self._watermark_ms
        late_before = self.batches[-1].watermark_ms if self.batches else watermark
        dropped = 0
        times: list[int] = []  # what reaches the watermark operator
        for record in records:
            if record.time_ms is None:
                continue
            if self.replay_from_event_ms is not None and record.time_ms < self.replay_from_event_ms:
                self.filtered_events += 1
                continue
            times.append(record.time_ms)
            for window_start, window_end in self.windows.of(record.time_ms):
                if self.replay_after_ms is not None and window_end <= self.replay_after_ms:
                    self.filtered_pairs += 1
                    continue
                if window_end <= late_before:
                    dropped += 1
                    continue
                group = (window_start, window_end, record.key)
                # Append mode writes a group once: an accepted pair never reaches a written
                # window, because that window ended at or before the lateness threshold.
                assert group not in self.written, group
                self._state.setdefault(group, []).append(record.event_id)
        written = tuple(sorted(group for group in self._state if group[1] <= watermark))
        for group in written:
            self.written[group] = tuple(self._state.pop(group))
        if times:
            top = max(times)
            self._max_event_ms = top if self._max_event_ms is None else max(self._max_event_ms, top)
        if self._max_event_ms is not None:
            self._watermark_ms = max(watermark, self._max_event_ms - self.windows.delay_ms)
        outcome = BatchOutcome(
            batch_id=len(self.batches),
            start_offsets=start,
            end_offsets=dict(self._position),
            watermark_ms=watermark,
            next_watermark_ms=self._watermark_ms,
            records=tuple(records),
            written=written,
            dropped_late=dropped,
        )
        self.batches.append(outcome)
        return outcome


def run_schedule(
    query: AppendQuery,
    schedule: Iterable[tuple[Mapping[int, int], bool]],
    *,
    stop_after: int | None = None,
) -> AppendQuery:
    """Run data batches ``(until, idle_after)`` in order, with Spark's no-data batches.

    ``idle_after`` says the source had nothing new after that batch, so a no-data batch runs
    if the watermark advanced (as with back-to-back batches or AvailableNow reaching the end
    of its backlog). ``stop_after`` stops the query once it has committed that many batches,
    possibly between a data batch and its no-data batch.
    """

    def stopped() -> bool:
        return stop_after is not None and len(query.batches) >= stop_after

    for until, idle_after in schedule:
        if stopped():
            break
        query.run_batch(until)
        if idle_after and query.no_data_batch_due and not stopped():
            query.run_no_data_batch()
    return query
