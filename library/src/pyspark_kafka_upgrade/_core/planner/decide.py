"""From the facts to the plan, in the order an upgrade is reasoned: pure, no I/O.

    facts ──advise──▶ verdict: does the old checkpoint carry the change?
          ──batch_level──▶ restart per partition from the ledger and checkpoint, checked
                           against retention; the replay filter
          ──scan_request──▶ the ranges to read: each partition's replay range (tightening)
                            and what already waits after the old end (late records)
          [the caller reads them: ``event_scan``]
          ──decide──▶ the plan: every subscribed partition aligned, each with its reason

Only the reading of records happens between the steps, so every rule here is tested on
hand-made facts, and the plan is whatever these functions say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_kafka_upgrade._core.planner.advisor import advise
from pyspark_kafka_upgrade._core.planner.late_records import late_threshold
from pyspark_kafka_upgrade._core.planner.restart import plan_restart
from pyspark_kafka_upgrade._core.planner.retention import check_retention
from pyspark_kafka_upgrade._core.planner.tightening import apply_scans, replay_ranges
from pyspark_kafka_upgrade._domain.records.advice import Advice
from pyspark_kafka_upgrade._domain.records.facts import UpgradeFacts
from pyspark_kafka_upgrade._domain.records.handoff import Handoff
from pyspark_kafka_upgrade._domain.records.history import EARLIEST, FlatOffsets
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, ReplayScan, UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import TableMovedError, UpgradeError
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import PartitionPlan, RestartKind, RestartPlan
from pyspark_kafka_upgrade._domain.records.scans import PartitionScan, ScanRange, WaitingScan
from pyspark_kafka_upgrade._domain.records.signature import (
    PipelineSignature,
    SignatureError,
    max_watermark_delay_ms,
)
from pyspark_kafka_upgrade._domain.values.catalog import SINKS
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec


@dataclass(frozen=True, slots=True)
class BatchLevel:
    """The plan before any record is read: batch-level restarts, retention checked."""

    restart: RestartPlan
    replay_filter: ReplayFilter
    late_before_event_ms: int | None  # in the new generation's window spec
    handoff: Handoff | None = None  # requested, for the plan to carry


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """What to read before deciding: the replay ranges, and what waits after the old end."""

    t_min: int  # a replay record feeds an open window when its event time is at or after this
    replay: tuple[ScanRange, ...]
    late_before_event_ms: int | None  # a waiting record is late when its event time is before
    waiting: tuple[ScanRange, ...]

    @property
    def records(self) -> int:
        """Offsets in every range: the work a scan has ahead, for its progress line."""
        return sum(max(0, span.end - span.start) for span in (*self.replay, *self.waiting))


@dataclass(frozen=True, slots=True)
class ScanResults:
    replay: Mapping[PartitionKey, PartitionScan]
    waiting: Mapping[PartitionKey, WaitingScan]


def advise_upgrade(facts: UpgradeFacts) -> Advice:
    """The advisor's verdict on the recorded signature against the current one."""
    return advise(facts.old_signature, facts.signature.to_json())


def batch_level(
    facts: UpgradeFacts, *, accept_data_loss: bool, handoff_at_ms: int | None = None
) -> BatchLevel:
    """Where each partition restarts by the ledger's and checkpoint's facts alone; for a
    handoff at ``handoff_at_ms`` (C), as if the old generation stopped at W = C."""
    refuse_moved_table(facts)
    if handoff_at_ms is None:
        # A running generation's table commits a batch before its checkpoint does: ahead
        # for a moment, by design. A handoff's answer reads the batch planned, not committed.
        _refuse_sink_ahead(facts)
    old_window = _old_window(facts)
    new_grid = (facts.signature.window.duration_ms, facts.signature.window.slide_ms)
    if handoff_at_ms is not None and (old_window.duration_ms, old_window.slide_ms) != new_grid:
        raise UpgradeError(
            "a handoff keeps the window: both generations write windows of one grid, split "
            "at C. This upgrade changes the window; make an ordinary plan (without "
            "--handoff-at)"
        )
    carried = None if facts.old_plan is None else facts.old_plan.replay_filter
    restart = plan_restart(
        window=old_window,
        checkpoint=facts.checkpoint,
        ledger=facts.ledger,
        gap_batch_ids=facts.gap_batch_ids,
        initial_offsets=facts.initial_offsets,
        max_watermark_delay_ms=max_watermark_delay_ms(facts.old_signature),
        written_through_ms=None if carried is None else carried.window_end_after_ms,
        handoff_at_ms=handoff_at_ms,
    )
    restart = check_retention(restart, facts.broker.earliest, accept_data_loss=accept_data_loss)
    new_window = facts.signature.window
    replay_filter = ReplayFilter.for_upgrade(restart.watermark_ms, old_window, new_window, carried)
    late_before, _ = late_threshold(replay_filter, new_window)
    handoff = None if handoff_at_ms is None else Handoff(handoff_at_ms)
    return BatchLevel(restart, replay_filter, late_before, handoff)


def scan_request(level: BatchLevel, facts: UpgradeFacts) -> ScanRequest:
    """The ranges ``decide`` needs read: none of them is read here."""
    restart_offsets = _aligned(level.restart, facts)[0]
    waiting = [
        ScanRange(key, start, end)
        for key, (start, end) in sorted(_waiting_ranges(level.restart, restart_offsets, facts))
    ]
    return ScanRequest(
        t_min=level.restart.earliest_open_event_ms,
        replay=tuple(replay_ranges(level.restart)),
        late_before_event_ms=level.late_before_event_ms,
        waiting=tuple(waiting),
    )


def decide(
    facts: UpgradeFacts, level: BatchLevel, advice: Advice, scans: ScanResults | None
) -> UpgradePlan:
    """The plan: every partition of the old generation or the subscription, with its reason."""
    restart = level.restart if scans is None else apply_scans(level.restart, scans.replay)
    restart_offsets, quarantine_offsets = _aligned(restart, facts)
    lost = {loss.partition: loss.lost_records for loss in restart.data_loss}
    by_key = {each.partition: each for each in restart.partitions}
    read = _read_topics(restart)
    partitions = []
    for key in sorted(by_key.keys() | restart_offsets.keys()):
        old = by_key.get(key)
        waiting = None if scans is None else scans.waiting.get(key)
        if key not in restart_offsets:
            assert old is not None  # every key comes from one of the two maps
            partitions.append(_dropped(old))
        elif old is None:
            partitions.append(
                _added(
                    key,
                    restart_offsets[key],
                    quarantine_offsets[key],
                    waiting,
                    topic_read=key[0] in read,
                )
            )
        else:
            replay = None if scans is None else scans.replay.get(key)
            partitions.append(
                PartitionRestart(
                    topic=key[0],
                    partition=key[1],
                    restart_offset=restart_offsets[key],
                    quarantine_offset=quarantine_offsets[key],
                    old_end_offset=old.end_offset,
                    kind=old.kind,
                    reason=old.reason,
                    lost_records=lost.get(key, 0),
                    replay_scan=None if replay is None else ReplayScan.of(replay),
                    waiting_scan=waiting,
                )
            )
    return UpgradePlan(
        pipeline=facts.pipeline,
        root=facts.root,
        from_generation=facts.old_generation,
        to_generation=facts.next_generation,
        last_committed_batch=restart.last_committed_batch,
        watermark_ms=restart.watermark_ms,
        window=restart.window,
        restart_batch=restart.restart_batch,
        replay_filter=level.replay_filter,
        late_before_event_ms=level.late_before_event_ms,
        partitions=tuple(partitions),
        notes=restart.notes,
        advice=advice,
        from_signature=facts.old_signature_digest,
        to_signature=facts.new_signature,
        parser_digest=facts.parser_digest,
        created_at_ms=facts.now_ms,
        handoff=level.handoff,
    )


def quarantine_start(restart_offsets: FlatOffsets, facts: UpgradeFacts) -> FlatOffsets:
    """Where the new quarantine query starts, before alignment to the subscription.

    Where the old quarantine stopped, exactly; if it never committed, where the old query
    began, so that no malformed record between there and the restart goes unquarantined;
    if nobody recorded that either, where the aggregates query restarts.
    """
    if facts.quarantine_offsets is not None:
        return facts.quarantine_offsets
    if facts.initial_offsets is not None:
        return facts.initial_offsets
    return restart_offsets


def align(
    offsets: FlatOffsets,
    subscribed: tuple[PartitionKey, ...],
    position: int,
    read_topics: frozenset[str],
) -> dict[PartitionKey, int]:
    """``offsets`` for exactly the subscribed partitions: both connectors want every one
    named in ``startingOffsets``. A partition never read starts at earliest (-2) when its
    topic was read, as Spark starts a partition that appears while a query runs, so none of
    its records is skipped; a partition of a newly subscribed topic starts at ``position``,
    where the settings start one (-2 or -1)."""
    return {
        key: offsets.get(key, EARLIEST if key[0] in read_topics else position) for key in subscribed
    }


def _read_topics(restart: RestartPlan) -> frozenset[str]:
    return frozenset(topic for topic, _ in restart.end_offsets)


def _aligned(
    restart: RestartPlan, facts: UpgradeFacts
) -> tuple[dict[PartitionKey, int], dict[PartitionKey, int]]:
    subscribed, position = facts.broker.subscribed, facts.new_partition_position
    read = _read_topics(restart)
    return (
        align(restart.restart_offsets, subscribed, position, read),
        align(quarantine_start(restart.restart_offsets, facts), subscribed, position, read),
    )


def _waiting_ranges(
    restart: RestartPlan, restart_offsets: Mapping[PartitionKey, int], facts: UpgradeFacts
) -> list[tuple[PartitionKey, tuple[int, int]]]:
    """The offsets the new generation reads after the old one's end, up to the latest now.

    A partition the old generation read is waiting from its end offset; a new one from its
    earliest offset if it starts there (-2), and not at all if it starts at latest. Records
    retention already deleted are not waiting.
    """
    old_end = restart.end_offsets
    earliest, latest = facts.broker.earliest, facts.broker.latest
    ranges = []
    for key, restart_at in restart_offsets.items():
        if key not in latest:
            continue
        if key in old_end:
            begin = old_end[key]
        elif restart_at == EARLIEST:
            begin = earliest.get(key, latest[key])
        else:
            begin = latest[key]
        ranges.append((key, (max(begin, earliest.get(key, begin)), latest[key])))
    return ranges


def _dropped(old: PartitionPlan) -> PartitionRestart:
    topic, number = old.partition
    return PartitionRestart(
        topic=topic,
        partition=number,
        restart_offset=None,
        quarantine_offset=None,
        old_end_offset=old.end_offset,
        kind=RestartKind.UNSUBSCRIBED,
        reason=f"no longer subscribed: the new generation does not read it (the old one read "
        f"it up to offset {old.end_offset})",
    )


def _added(
    key: PartitionKey,
    restart_at: int,
    quarantine_at: int,
    waiting: WaitingScan | None,
    *,
    topic_read: bool,
) -> PartitionRestart:
    where = {EARLIEST: "earliest (-2)"}.get(restart_at, "latest (-1)")
    why = (
        f"added to topic {key[0]} after the old generation read it: it starts at {where}, "
        "as Spark starts a partition that appears while a query runs"
        if topic_read
        else f"newly subscribed, never read by the old generation: it starts at {where}, "
        "where kafka.starting_offsets starts a partition"
    )
    return PartitionRestart(
        topic=key[0],
        partition=key[1],
        restart_offset=restart_at,
        quarantine_offset=quarantine_at,
        old_end_offset=None,
        kind=RestartKind.SUBSCRIBED,
        reason=why,
        waiting_scan=waiting,
    )


def _old_window(facts: UpgradeFacts) -> WindowSpec:
    """The windows the old generation wrote are of its own spec, whatever the new one is.

    A recorded signature that cannot be read leaves only the current spec to reason with.
    """
    try:
        return PipelineSignature.from_json(facts.old_signature).window
    except SignatureError:
        return facts.signature.window


def _refuse_sink_ahead(facts: UpgradeFacts) -> None:
    """The sink commits batch k before the checkpoint's commits/k is written.

    A run killed between the two leaves batch k's windows in the output while the
    checkpoint says k never ran. Planning from batch k-1 would write them again; running
    the old generation once more lets Spark finish batch k (its sink skips the rewrite).
    """
    sink_last = facts.sink_last_batch
    committed = facts.checkpoint.last_committed_batch
    if sink_last is not None and (committed is None or sink_last > committed):
        generation = facts.old_generation
        raise UpgradeError(
            f"generation {generation}'s output holds batch {sink_last} but its "
            f"checkpoint committed only up to batch {committed}: the last run was killed "
            f"mid-commit. Run generation {generation} once more (with the old settings, "
            "e.g. `run --available-now`) so that it finishes that batch, then plan again"
        )


def refuse_moved_table(facts: UpgradeFacts) -> None:
    """One table holds every generation: a new generation appending elsewhere would leave the
    old generations' windows in a table its readers no longer read, and the plan's checks
    (the sink ahead of its checkpoint) would look at a table the old generation never wrote.
    So the table's location (``sink.table_location``) may not change at an upgrade."""
    old_sink = facts.old_signature.get("sink")
    if not isinstance(old_sink, Mapping):
        return
    old_path, new = old_sink.get("path"), facts.signature
    if not (_one_table(old_sink.get("format")) and _one_table(new.sink_format)):
        return  # files to a table, or back: each generation is read on its own
    if isinstance(old_path, str) and old_path != new.sink_path:
        raise TableMovedError(
            f"sink.table_location changed from {old_path} to {new.sink_path}: one table holds "
            f"every generation, and generation {facts.old_generation} and those before it "
            f"wrote to {old_path}. Keep sink.table_location = {old_path!r} (readers can find "
            "the table by sink.table_name); moving the table is not an upgrade this version "
            "makes"
        )


def _one_table(sink_format: object) -> bool:
    return any(sink_format == name and kind.one_table for name, kind in SINKS.items())
