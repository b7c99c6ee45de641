"""Which generation owns each window, which batch read each offset, and what to read back.

`verify` recomputes every window from the source and compares it with what the generations
wrote. Three facts decide what each window must hold, all read from the ledger, the
checkpoints and the plans, none from the output it checks:

- **The owner.** Each (event, window) pair belongs to exactly one generation: the one whose
  replay filter keeps it and whose successor's filter does not. That is the split every
  upgrade plan made (``window.end > W``, or ``event_time >= E`` when the window changed).
- **The batch.** Which batch of the owner read the event's offset, and so the watermark its
  lateness was judged by: Spark drops a pair whose window ended at or before the previous
  batch's watermark (FACTS §6). A batch that begins a run may judge by its own, so for it a
  band stays uncertain. Offsets in no batch the ledger or checkpoint knows are a gap.
- **What is written.** The owner writes a window once its watermark reaches the window's end;
  after a running generation's watermark, a window is open.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyspark_kafka_upgrade._domain.records.history import EARLIEST, BatchFacts, FlatOffsets
from pyspark_kafka_upgrade._domain.records.ledger import GenerationStatus
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.verification import (
    DeletedRange,
    GenerationFacts,
    VerifyFacts,
)
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.validation import MetricSpec, WindowSpec, parse_metric

_END_OF_TIME = 2**62
LATEST = -1  # Kafka's startingOffsets code for the latest offset


@dataclass(frozen=True, slots=True)
class Span:
    """Offsets [start, end) of one partition that one batch of a generation read (or a gap).

    A pair read here is late when its window ends at or before ``late_through_ms``, counted
    when it ends after ``on_time_after_ms``, and uncertain in between (a batch that began a
    run, or a gap of unrecorded batches).
    """

    topic: str
    partition: int
    start: int
    end: int
    batch_id: int | None  # None: a gap, batches neither the ledger nor the checkpoint know
    late_through_ms: int
    on_time_after_ms: int
    min_event_time_ms: int | None = None  # of the batch's valid events
    max_event_time_ms: int | None = None
    event_times_known: bool = False  # the ledger recorded the batch (None, None: no event)


@dataclass(frozen=True, slots=True)
class GenerationScope:
    """One generation's share of the output, and how it read its events."""

    generation: int
    window: WindowSpec
    topics: tuple[str, ...]  # what it subscribed to
    keys: tuple[str, ...]
    metrics: tuple[MetricSpec, ...]
    owns: ReplayFilter  # the pairs its own replay filter keeps
    next_owns: ReplayFilter | None  # the pairs its successor takes over; None: no successor
    written_through_ms: int | None  # its last batch's watermark; None: it ran no batch
    running: bool  # no successor: windows after its watermark are open, not abandoned
    spans: tuple[Span, ...]
    first_offsets: Mapping[PartitionKey, int]  # where it began reading, per partition
    # Where it stopped (or is), per partition: a partition only the plan that retired it
    # names (batches its ledger lost) has an end and no known beginning.
    last_offsets: Mapping[PartitionKey, int]
    # Partitions its plan started at "latest" on purpose: what came before is nobody's.
    started_at_latest: frozenset[PartitionKey] = frozenset()

    def outside(self, key: PartitionKey) -> bool:
        """Whether the records of partition ``key`` were by design never this generation's.

        It never had the partition, and either did not subscribe to its topic, or has a
        successor: a source reads every partition of its topics in each batch, so a partition
        missing from all of a stopped generation's batches was added after its last one, and
        its records of the windows this generation owns are dropped by the successor's replay
        filter, as late. A running generation missing a partition of its topics lost it.
        """
        if key in self.first_offsets or key in self.last_offsets:
            return False
        return key[0] not in self.topics or not self.running


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """The offsets to read back, what retention deleted of them, and what that hides."""

    start: Mapping[PartitionKey, int]
    end: Mapping[PartitionKey, int]
    deleted: tuple[DeletedRange, ...]
    # Event-time ranges [low, high] of batches that read deleted offsets: windows touching
    # them cannot be recomputed.
    hidden_event_times: tuple[tuple[int, int], ...]

    def offsets_json(self, which: Mapping[PartitionKey, int]) -> dict[str, dict[str, int]]:
        document: dict[str, dict[str, int]] = {}
        for (topic, partition), offset in sorted(which.items()):
            document.setdefault(topic, {})[str(partition)] = offset
        return document


def generation_scopes(facts: VerifyFacts) -> tuple[GenerationScope, ...]:
    """Every generation in the chain, oldest first, with what it owns and how it read.

    A generation retired without a batch (one rolled back) takes no part.
    """
    chain = [
        generation
        for generation in facts.generations
        if generation.ledger
        or generation.checkpoint
        or generation.status is not GenerationStatus.RETIRED
    ]
    owns = _owners(chain)
    return tuple(_scope(chain, index, owns, facts.earliest) for index in range(len(chain)))


def _owners(chain: Sequence[GenerationFacts]) -> list[ReplayFilter]:
    """Each generation's replay filter: the pairs it keeps, its successor's aside."""
    owns: list[ReplayFilter] = []
    for index, generation in enumerate(chain):
        if generation.plan is not None:
            owns.append(generation.plan.replay_filter)
        elif index == 0:
            owns.append(ReplayFilter())
        else:
            # Started without a plan: the split a plan would have made at the old watermark.
            before = chain[index - 1]
            owns.append(
                ReplayFilter.for_upgrade(
                    _written_through(before) or 0,
                    before.signature.window,
                    generation.signature.window,
                    carried=owns[index - 1],
                )
            )
    return owns


def _scope(
    chain: Sequence[GenerationFacts],
    index: int,
    owns: Sequence[ReplayFilter],
    earliest: FlatOffsets,
) -> GenerationScope:
    generation = chain[index]
    last = index == len(chain) - 1
    spans = batch_spans(generation, earliest)
    # The plan that retired it saw its last committed batch: where it stopped and its W
    # hold even when its ledger lost its last batches and its checkpoint is gone.
    retiring = None if last else chain[index + 1].plan
    through = _written_through(generation)
    # Where it stopped (or is) in each partition it was assigned.
    stopped_at = _offsets_by(max, generation, (((s.topic, s.partition), s.end) for s in spans))
    if retiring is not None:
        through = max(through if through is not None else 0, retiring.watermark_ms)
        for key, offset in retiring.old_end_offsets.items():
            stopped_at[key] = max(stopped_at.get(key, offset), offset)
    signature = generation.signature
    planned = generation.plan.restart_offsets if generation.plan is not None else {}
    return GenerationScope(
        generation=generation.generation,
        window=signature.window,
        topics=tuple(topic for source in signature.sources for topic in source.topics),
        keys=signature.grouping_keys,
        metrics=tuple(
            parse_metric(aggregate.name, aggregate.expression) for aggregate in signature.aggregates
        ),
        owns=owns[index],
        next_owns=None if last else owns[index + 1],
        written_through_ms=through,
        running=last,
        spans=spans,
        # A partition it never read a record of (its offsets never moved) begins where it sat.
        first_offsets=_offsets_by(
            min, generation, (((s.topic, s.partition), s.start) for s in spans)
        ),
        last_offsets=stopped_at,
        started_at_latest=frozenset(key for key, offset in planned.items() if offset == LATEST),
    )


@dataclass(frozen=True, slots=True)
class _Known:
    batch_id: int
    end: FlatOffsets
    watermark_ms: int
    start: FlatOffsets | None
    run_id: str | None
    min_event_time_ms: int | None
    max_event_time_ms: int | None
    from_ledger: bool = False


def _known_batches(generation: GenerationFacts) -> list[_Known]:
    """The ledger's batches, and the checkpoint's where the ledger trails or lost them.

    The checkpoint decides what committed (DESIGN §5); the ledger adds event times, start
    offsets and run ids.
    """
    known: dict[int, _Known] = {}
    for batch in generation.ledger:
        known[batch.batch_id] = _of_ledger(batch)
    for entry in generation.checkpoint:
        recorded = known.get(entry.batch_id)
        if recorded is None:
            known[entry.batch_id] = _Known(
                entry.batch_id, entry.end_offsets, entry.watermark_ms, None, None, None, None
            )
        elif recorded.end != entry.end_offsets or recorded.watermark_ms != entry.watermark_ms:
            # Checkpoint truth: keep its offsets and watermark, not what the ledger says.
            known[entry.batch_id] = _Known(
                entry.batch_id, entry.end_offsets, entry.watermark_ms, None, None, None, None
            )
    return [known[batch_id] for batch_id in sorted(known)]


def _of_ledger(batch: BatchFacts) -> _Known:
    return _Known(
        batch.batch_id,
        batch.end_offsets,
        batch.watermark_ms,
        batch.start_offsets,
        batch.run_id,
        batch.min_event_time_ms,
        batch.max_event_time_ms,
        from_ledger=True,
    )


def batch_spans(generation: GenerationFacts, earliest: FlatOffsets) -> tuple[Span, ...]:
    """The offset ranges each known batch of ``generation`` read, and the gaps between them."""
    spans: list[Span] = []
    previous: _Known | None = None
    for batch in _known_batches(generation):
        consecutive = previous is not None and previous.batch_id == batch.batch_id - 1
        if previous is not None and not consecutive:
            # Unrecorded batches ran between: their lateness bounds lie between the two.
            spans += _spans(
                previous.end,
                batch.start if batch.start is not None else previous.end,
                None,
                previous.watermark_ms,
                batch.watermark_ms,
            )
        elif previous is None and batch.batch_id > 0 and batch.start is not None:
            # The batches before the first known one read from where the generation
            # began up to this batch's start: a gap.
            spans += _spans(
                _first_start(generation, batch, earliest, prefer_recorded=False),
                batch.start,
                None,
                0,
                batch.watermark_ms,
            )
        begin = _begin(generation, batch, previous, consecutive, earliest)
        late_through, on_time_after = _lateness(batch, previous, consecutive)
        spans += _spans(
            begin,
            batch.end,
            batch.batch_id,
            late_through,
            on_time_after,
            batch.min_event_time_ms,
            batch.max_event_time_ms,
            batch.from_ledger,
        )
        previous = batch
    return tuple(spans)


def _begin(
    generation: GenerationFacts,
    batch: _Known,
    previous: _Known | None,
    consecutive: bool,
    earliest: FlatOffsets,
) -> Mapping[PartitionKey, int]:
    """Where ``batch`` began reading each partition."""
    if batch.batch_id == 0 or previous is None:
        return _first_start(generation, batch, earliest)
    if not consecutive and batch.start is not None:
        return batch.start  # the gap's span ends here
    # A partition added while the query ran is read from its earliest offset.
    return {
        key: previous.end.get(key, (batch.start or {}).get(key, earliest.get(key, 0)))
        for key in batch.end
    }


def _lateness(batch: _Known, previous: _Known | None, consecutive: bool) -> tuple[int, int]:
    """The watermarks ``batch`` judged lateness by: late through, on time after."""
    if batch.batch_id == 0:
        # A query's first batch judges lateness by its own watermark (0 when new).
        return batch.watermark_ms, batch.watermark_ms
    if consecutive and previous is not None:
        begins_run = batch.run_id is None or batch.run_id != previous.run_id
        return previous.watermark_ms, batch.watermark_ms if begins_run else previous.watermark_ms
    return previous.watermark_ms if previous is not None else 0, batch.watermark_ms


def _first_start(
    generation: GenerationFacts,
    batch: _Known,
    earliest: FlatOffsets,
    *,
    prefer_recorded: bool = True,
) -> dict[PartitionKey, int]:
    """Where the generation's first known batch began, per partition it ended on.

    ``prefer_recorded=False`` asks where the generation itself began, for the gap before a
    first known batch that is not batch 0.
    """
    planned: Mapping[PartitionKey, int] = {}
    if prefer_recorded and batch.start is not None:
        planned = batch.start
    elif generation.plan is not None:
        planned = generation.plan.restart_offsets
    initial = generation.initial_offsets or {}
    begin = {}
    for key in batch.end:
        offset = planned.get(key, initial.get(key, EARLIEST))
        if offset == LATEST:
            # Where "latest" was when the query started: the source stored it, else unknown,
            # so from the batch's own end (the span then holds nothing it did not read).
            offset = initial.get(key, batch.end[key])
        # -2 (and a partition nobody recorded): from the earliest offset there was.
        begin[key] = earliest.get(key, 0) if offset < 0 else offset
    return begin


def _spans(
    start: Mapping[PartitionKey, int],
    end: Mapping[PartitionKey, int],
    batch_id: int | None,
    late_through_ms: int,
    on_time_after_ms: int,
    min_event_time_ms: int | None = None,
    max_event_time_ms: int | None = None,
    event_times_known: bool = False,
) -> list[Span]:
    spans = []
    for key, until in sorted(end.items()):
        begin = start.get(key, until)
        if until > begin:
            spans.append(
                Span(
                    key[0],
                    key[1],
                    begin,
                    until,
                    batch_id,
                    late_through_ms,
                    max(late_through_ms, on_time_after_ms),
                    min_event_time_ms,
                    max_event_time_ms,
                    event_times_known,
                )
            )
    return spans


def _written_through(generation: GenerationFacts) -> int | None:
    marks = [batch.watermark_ms for batch in generation.ledger]
    marks += [batch.watermark_ms for batch in generation.checkpoint]
    return max(marks) if marks else None


def _offsets_by(
    pick: Callable[[int, int], int],
    generation: GenerationFacts,
    bounds: Iterable[tuple[PartitionKey, int]],
) -> dict[PartitionKey, int]:
    """Per partition, the least (``min``) or greatest (``max``) of the known batches' end
    offsets and of ``bounds``."""
    chosen: dict[PartitionKey, int] = {}
    ends = ((key, at) for batch in _known_batches(generation) for key, at in batch.end.items())
    for key, offset in itertools.chain(ends, bounds):
        chosen[key] = pick(chosen.get(key, offset), offset)
    return chosen


def default_from_ms(scopes: Sequence[GenerationScope], facts: VerifyFacts) -> int:
    """The windows around the last upgrade: from two windows and delays before its W.

    With no upgrade, the same distance before the running generation's watermark.
    """
    planned = [g.plan for g in facts.generations if g.plan is not None]
    if planned:
        plan = planned[-1]
        reference, window = plan.watermark_ms, plan.window
    elif scopes:
        reference, window = scopes[-1].written_through_ms or 0, scopes[-1].window
    else:
        return 0
    start = reference - 2 * (window.duration_ms + window.watermark_delay_ms)
    return max(0, start - start % window.slide_ms)


def read_plan(
    scopes: Sequence[GenerationScope],
    earliest: FlatOffsets,
    *,
    from_ms: int,
    to_ms: int | None,
) -> ReadPlan:
    """The offsets that can hold an event of the range, read once for every generation.

    A batch whose events all lie before ``from_ms`` (or at or after ``to_ms``) is left out;
    one the ledger has no event times for is read. The end is where each partition was last
    read: `verify` checks what the pipeline has read, nothing newer. So are the offsets that
    no generation read between one generation's end and the next one's start (a partition
    new to the next one from the earliest offset): a later generation must count their
    events of its windows, and only reading them shows whether a restart skipped any.
    """
    start: dict[PartitionKey, int] = {}
    end: dict[PartitionKey, int] = {}

    def include(key: PartitionKey, first: int, until: int) -> None:
        start[key] = min(start.get(key, first), first)
        end[key] = max(end.get(key, until), until)

    for scope in scopes:
        for span in scope.spans:
            if _may_hold(span, from_ms, to_ms):
                include((span.topic, span.partition), span.start, span.end)
    for before, scope in itertools.pairwise(scopes):
        for key, first in unread_before(before, scope, earliest).items():
            include(key, first, scope.first_offsets[key])
    deleted = []
    for key, begin in sorted(start.items()):
        kept = earliest.get(key)
        if kept is not None and kept > begin:
            deleted.append(DeletedRange(key[0], key[1], begin, min(kept, end[key])))
            start[key] = min(kept, end[key])
    hidden = sorted(
        {
            _event_times(span)
            for scope in scopes
            for span in scope.spans
            for gone in deleted
            if (span.topic, span.partition) == (gone.topic, gone.partition)
            and span.start < gone.end
            and span.end > gone.first
            and not (span.event_times_known and span.min_event_time_ms is None)
        }
    )
    return ReadPlan(
        start={key: start[key] for key in sorted(start)},
        end={key: end[key] for key in sorted(start)},
        deleted=tuple(deleted),
        hidden_event_times=tuple(hidden),
    )


def unread_before(
    before: GenerationScope, scope: GenerationScope, earliest: FlatOffsets
) -> dict[PartitionKey, int]:
    """Per partition, where the offsets begin that neither ``before`` nor ``scope`` read,
    up to ``scope``'s first offset: from ``before``'s last offset, or the earliest one where
    ``before`` never had the partition. A partition ``scope`` started at "latest" on purpose
    (its plan says so) has none: what came before was nobody's to count."""
    unread = {}
    for key, first in scope.first_offsets.items():
        if key in scope.started_at_latest:
            continue
        begin = before.last_offsets.get(key, earliest.get(key, 0))
        if first > begin:
            unread[key] = begin
    return unread


def _event_times(span: Span) -> tuple[int, int]:
    """The event times a span's batch read; all of time when the ledger does not say."""
    if span.event_times_known and span.min_event_time_ms is not None:
        return span.min_event_time_ms, span.max_event_time_ms or span.min_event_time_ms
    return 0, _END_OF_TIME


def _may_hold(span: Span, from_ms: int, to_ms: int | None) -> bool:
    if not span.event_times_known:
        return True
    if span.min_event_time_ms is None or span.max_event_time_ms is None:
        return False  # the ledger says it read no valid event
    if span.max_event_time_ms < from_ms:
        return False
    return to_ms is None or span.min_event_time_ms < to_ms
