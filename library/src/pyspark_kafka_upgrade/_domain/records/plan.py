"""The upgrade plan: one typed record, reviewed as a file, applied exactly, read by `run`.

Each fact is held once. Totals (records to replay, late records, amplification) and forms
derived for Spark (``startingOffsets`` text) are properties computed from the facts, never
stored beside them. The JSON form is what ``upgrade plan --out`` writes, what the ledger keeps
for the generation the plan starts, and what ``--json`` prints; ``from_json`` refuses a
document of a newer format, or one that is not a plan, with one line naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Self

from pyspark_kafka_upgrade._domain.records.advice import Advice
from pyspark_kafka_upgrade._domain.records.record_errors import (
    PlanFormatError,
    PlanFormatVersionError,
    PlanningError,
)
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from pyspark_kafka_upgrade._domain.records.scans import PartitionScan, WaitingScan
from pyspark_kafka_upgrade._domain.records.signature import PipelineSignature, SignatureError
from pyspark_kafka_upgrade._domain.values.json_fields import JsonFields
from pyspark_kafka_upgrade._domain.values.offsets import (
    InvalidOffsetsError,
    PartitionKey,
    flatten,
    format_offsets,
    parse_offsets,
    unflatten,
)
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

# Raised when a field changes meaning or a required one is added; readers refuse newer ones.
FORMAT_VERSION = 1
WHAT = "upgrade plan"


@dataclass(frozen=True, slots=True)
class ReplayScan:
    """What the tightening scan of one partition's batch-level replay range counted."""

    batch_level_offset: int  # where the batch-level plan restarted it; the scan began here
    scanned_records: int
    malformed_records: int
    unsure_records: int  # could not be judged without Spark: taken as feeding
    feeding_records: int | None  # event time at or after T_min; None: not counted
    replayed_records: int  # from the restart offset on: what the new generation reads again

    @classmethod
    def of(cls, scan: PartitionScan) -> Self:
        return cls(
            batch_level_offset=scan.batch_level_offset,
            scanned_records=scan.scanned_records,
            malformed_records=scan.malformed_records,
            unsure_records=scan.unsure_records,
            feeding_records=scan.feeding_records,
            replayed_records=scan.replayed_records,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "batch_level_offset": self.batch_level_offset,
            "scanned_records": self.scanned_records,
            "malformed_records": self.malformed_records,
            "unsure_records": self.unsure_records,
            "feeding_records": self.feeding_records,
            "replayed_records": self.replayed_records,
        }

    @classmethod
    def from_json(cls, read: JsonFields) -> Self:
        return cls(
            batch_level_offset=read.integer("batch_level_offset"),
            scanned_records=read.integer("scanned_records"),
            malformed_records=read.integer("malformed_records"),
            unsure_records=read.integer("unsure_records"),
            feeding_records=read.optional_integer("feeding_records"),
            replayed_records=read.integer("replayed_records"),
        )


@dataclass(frozen=True, slots=True)
class PartitionRestart:
    """One partition: where both queries of the new generation start it, and why."""

    topic: str
    partition: int
    # None: no longer subscribed, not read again. -2 (earliest) or -1 (latest) for a
    # partition whose start the broker resolves when the query starts.
    restart_offset: int | None
    quarantine_offset: int | None  # None exactly when restart_offset is None
    old_end_offset: int | None  # where the old generation stopped; None: it never read it
    kind: RestartKind
    reason: str
    lost_records: int = 0  # deleted by retention before the plan, accepted with the loss
    replay_scan: ReplayScan | None = None  # None: not scanned (--no-scan, or nothing to read)
    waiting_scan: WaitingScan | None = None  # None: not scanned

    @property
    def key(self) -> PartitionKey:
        return (self.topic, self.partition)

    @property
    def subscribed(self) -> bool:
        return self.restart_offset is not None

    @property
    def records_to_replay(self) -> int | None:
        """Offsets the new generation reads again below the old end: 0 for a partition the
        old generation never read; None while the restart is a position (-2, -1)."""
        if self.restart_offset is None or self.old_end_offset is None:
            return 0
        if self.restart_offset < 0:
            return None
        return max(0, self.old_end_offset - self.restart_offset)

    def to_json(self) -> dict[str, object]:
        """Its reason and counts; its offsets are in the plan's three offsets texts."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "kind": self.kind.value,
            "reason": self.reason,
            "lost_records": self.lost_records,
            "replay_scan": None if self.replay_scan is None else self.replay_scan.to_json(),
            "waiting_scan": None if self.waiting_scan is None else self.waiting_scan.to_json(),
        }

    @classmethod
    def from_json(cls, read: JsonFields, offsets: _OffsetMaps) -> Self:
        topic, number = read.text("topic"), read.integer("partition")
        kind = read.text("kind")
        if kind not in set(RestartKind):
            raise read.error(f"{WHAT} partition kind {kind!r} is not one this version knows")
        replay, waiting = read.optional_child("replay_scan"), read.optional_child("waiting_scan")
        key = (topic, number)
        made = cls(
            topic=topic,
            partition=number,
            restart_offset=offsets.restart.get(key),
            quarantine_offset=offsets.quarantine.get(key),
            old_end_offset=offsets.old_end.get(key),
            kind=RestartKind(kind),
            reason=read.text("reason"),
            lost_records=read.integer("lost_records"),
            replay_scan=None if replay is None else ReplayScan.from_json(replay),
            waiting_scan=None if waiting is None else WaitingScan.from_json(key, waiting),
        )
        if (made.restart_offset is None) != (made.quarantine_offset is None):
            raise read.error(
                f"{WHAT}: {topic} partition {number} has a restart offset without a quarantine "
                "offset or the other way round"
            )
        if made.restart_offset is None and made.old_end_offset is None:
            raise read.error(f"{WHAT}: {topic} partition {number} is in no offsets text")
        return made


@dataclass(frozen=True, slots=True)
class _OffsetMaps:
    """The plan's three offsets texts, read: where each partition restarts, in both queries,
    and where the old generation ended."""

    restart: dict[PartitionKey, int]
    quarantine: dict[PartitionKey, int]
    old_end: dict[PartitionKey, int]

    @classmethod
    def read(cls, read: JsonFields) -> _OffsetMaps:
        maps = []
        for field in ("restart_offsets", "quarantine_offsets", "old_end_offsets"):
            try:
                maps.append(flatten(parse_offsets(read.text(field), what=field)))
            except InvalidOffsetsError as error:
                raise PlanFormatError(f"{WHAT} field {field!r}: {error}") from None
        restart, quarantine, old_end = maps
        if restart.keys() != quarantine.keys():
            raise PlanFormatError(
                f"{WHAT}: restart_offsets and quarantine_offsets name different partitions"
            )
        return cls(restart, quarantine, old_end)

    def partitions(self) -> list[PartitionKey]:
        return sorted(self.restart.keys() | self.old_end.keys())


@dataclass(frozen=True, slots=True)
class UpgradePlan:
    """Everything the move from one generation to the next depends on (DESIGN, "Plan")."""

    pipeline: str
    root: str  # the pipeline root the generations' directories live under
    from_generation: int
    to_generation: int
    last_committed_batch: int  # of the old generation's checkpoint
    watermark_ms: int  # W: batchWatermarkMs of that batch (never below the plan before's)
    window: WindowSpec  # the old generation's, whose written windows W bounds
    restart_batch: int | None  # the first batch that can feed an open window; None: none can
    replay_filter: ReplayFilter
    late_before_event_ms: int | None  # the new generation drops records before this whole
    partitions: tuple[PartitionRestart, ...]  # every partition, canonical order
    notes: tuple[str, ...]  # what the planner noticed: gaps, disagreements, fallbacks
    advice: Advice
    from_signature: str  # digest of the signature the old generation recorded
    # The signature of the code and settings planned for: `apply` records it for the new
    # generation, after checking that the code and settings it runs with still build it.
    # None only in a plan a version before these documents had types made (``_legacy``).
    to_signature: PipelineSignature | None
    # How records were parsed for the scans (``event_parser.parser_digest``): a change makes
    # other records malformed, so other restart offsets. None as for to_signature.
    parser_digest: str | None
    created_at_ms: int
    applied_at_ms: int | None = None
    consumed_at_ms: int | None = None  # set by `run` after the new generation's first commit
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        keys = [each.key for each in self.partitions]
        if keys != sorted(set(keys)):
            raise PlanFormatError(f"{WHAT}: partitions must be unique and in canonical order")
        if not 1 <= self.from_generation < self.to_generation:
            raise PlanFormatError(
                f"{WHAT}: generation {self.from_generation} -> {self.to_generation} goes nowhere"
            )

    @property
    def restart_offsets(self) -> dict[PartitionKey, int]:
        """Where the aggregates query starts each subscribed partition."""
        return {p.key: p.restart_offset for p in self.partitions if p.restart_offset is not None}

    @property
    def old_end_offsets(self) -> dict[PartitionKey, int]:
        """Where the old generation stopped, for each partition it read."""
        return {p.key: p.old_end_offset for p in self.partitions if p.old_end_offset is not None}

    @property
    def quarantine_offsets(self) -> dict[PartitionKey, int]:
        return {
            p.key: p.quarantine_offset for p in self.partitions if p.quarantine_offset is not None
        }

    @property
    def starting_offsets(self) -> str:
        """``startingOffsets`` of the new aggregates query, in canonical form."""
        return format_offsets(unflatten(self.restart_offsets))

    @property
    def quarantine_starting_offsets(self) -> str:
        return format_offsets(unflatten(self.quarantine_offsets))

    @property
    def window_changed(self) -> bool:
        """The new window spec differs from the old: the generations split in event time."""
        return self.replay_filter.window_end_after_ms is None

    @property
    def records_to_replay(self) -> int | None:
        counts = [p.records_to_replay for p in self.partitions if p.subscribed]
        return None if None in counts else sum(count or 0 for count in counts)

    @property
    def scanned(self) -> bool:
        return any(p.replay_scan is not None or p.waiting_scan is not None for p in self.partitions)

    @property
    def late_records(self) -> int | None:
        """Records already waiting that the new generation drops whole; None: not counted."""
        waiting = [p.waiting_scan for p in self.partitions if p.subscribed]
        if not self.scanned:
            return None
        return sum(scan.late_records for scan in waiting if scan is not None)

    def applied(self, at_ms: int) -> UpgradePlan:
        return replace(self, applied_at_ms=at_ms)

    def consumed(self, at_ms: int) -> UpgradePlan:
        return replace(self, consumed_at_ms=at_ms)

    def as_reviewed(self) -> UpgradePlan:
        """This plan as ``plan --out`` wrote it: before apply and run stamped it."""
        return replace(self, applied_at_ms=None, consumed_at_ms=None)

    def to_json(self) -> dict[str, object]:
        return {
            "format_version": self.format_version,
            "pipeline": self.pipeline,
            "root": self.root,
            "from_generation": self.from_generation,
            "to_generation": self.to_generation,
            "last_committed_batch": self.last_committed_batch,
            "watermark_ms": self.watermark_ms,
            "window": {
                "duration_ms": self.window.duration_ms,
                "slide_ms": self.window.slide_ms,
                "watermark_delay_ms": self.window.watermark_delay_ms,
            },
            "restart_batch": self.restart_batch,
            "replay_filter": self.replay_filter.to_json(),
            "restart_offsets": self.starting_offsets,
            "quarantine_offsets": self.quarantine_starting_offsets,
            "old_end_offsets": format_offsets(unflatten(self.old_end_offsets)),
            # The estimate DESIGN asks the plan to state; derived, and checked when read.
            "records_to_replay": self.records_to_replay,
            "late_before_event_ms": self.late_before_event_ms,
            "partitions": [each.to_json() for each in self.partitions],
            "notes": list(self.notes),
            "advice": self.advice.to_json(),
            "from_signature": self.from_signature,
            "to_signature": None if self.to_signature is None else self.to_signature.to_json(),
            "parser_digest": self.parser_digest,
            "created_at_ms": self.created_at_ms,
            "applied_at_ms": self.applied_at_ms,
            "consumed_at_ms": self.consumed_at_ms,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        read = JsonFields(data, WHAT, PlanFormatError)
        if not read.has("format_version") and read.has("restart"):
            return cls._legacy(read)
        version = read.integer("format_version")
        if version > FORMAT_VERSION:
            raise PlanFormatVersionError(
                f"the plan has format version {version}, newer than the {FORMAT_VERSION} this "
                "version of the pipeline reads: apply it with the version that wrote it"
            )
        if version < 1:
            raise PlanFormatError(f"{WHAT} format version {version} does not exist")
        offsets = _OffsetMaps.read(read)
        partitions = tuple(
            PartitionRestart.from_json(p, offsets) for p in read.children("partitions")
        )
        if [p.key for p in partitions] != offsets.partitions():
            raise PlanFormatError(
                f"{WHAT}: the partitions listed are not those its offsets texts name"
            )
        plan = cls(
            pipeline=read.text("pipeline"),
            root=read.text("root"),
            from_generation=read.integer("from_generation"),
            to_generation=read.integer("to_generation"),
            last_committed_batch=read.integer("last_committed_batch"),
            watermark_ms=read.integer("watermark_ms"),
            window=_window(read.child("window")),
            restart_batch=read.optional_integer("restart_batch"),
            replay_filter=_replay_filter(read.raw("replay_filter")),
            late_before_event_ms=read.optional_integer("late_before_event_ms"),
            partitions=partitions,
            notes=tuple(read.texts("notes")),
            advice=Advice.from_json(read.child("advice")),
            from_signature=read.text("from_signature"),
            to_signature=_signature(read),
            parser_digest=read.optional_text("parser_digest"),
            created_at_ms=read.integer("created_at_ms"),
            applied_at_ms=read.optional_integer("applied_at_ms"),
            consumed_at_ms=read.optional_integer("consumed_at_ms"),
            format_version=version,
        )
        if read.optional_integer("records_to_replay") != plan.records_to_replay:
            raise PlanFormatError(
                f"{WHAT}: records_to_replay is {read.raw('records_to_replay')!r}, but its "
                f"offsets give {plan.records_to_replay!r}"
            )
        return plan

    @classmethod
    def _legacy(cls, read: JsonFields) -> Self:
        """A plan as versions before the typed plan stored it in the ledger: the offsets as
        texts, the filter as two bounds, the planner's own document under ``restart``.
        Read so that `run`, `rollback` and the next plan go on with a generation it
        started; it names no signature, so it is never applied from a file."""
        restart = read.child("restart")
        to_generation = read.integer("to_generation")
        offsets = _OffsetMaps(
            restart=_offsets(read, "restart_offsets"),
            quarantine=_offsets(read, "quarantine_offsets"),
            old_end=_offsets(restart, "end_offsets"),
        )
        reasons = {
            (item.text("topic"), item.integer("partition")): item.text("reason")
            for item in restart.children("partitions")
        }
        restart_batch = restart.optional_integer("restart_batch")
        kept = (
            RestartKind.NOTHING_TO_REBUILD
            if restart_batch is None
            else RestartKind.FIRST_FEEDING_RECORD
            if restart.raw("tightening") is not None
            else RestartKind.FIRST_FEEDING_BATCH
        )
        partitions = []
        for key in offsets.partitions():
            old_end = offsets.old_end.get(key)
            kind = (
                RestartKind.SUBSCRIBED
                if old_end is None
                else RestartKind.UNSUBSCRIBED
                if key not in offsets.restart
                else kept
            )
            partitions.append(
                PartitionRestart(
                    topic=key[0],
                    partition=key[1],
                    restart_offset=offsets.restart.get(key),
                    quarantine_offset=offsets.quarantine.get(key),
                    old_end_offset=old_end,
                    kind=kind,
                    reason=reasons.get(key, kind.value),
                )
            )
        checkpoint = read.text("checkpoint")
        suffix = f"/checkpoints/generation-{to_generation}/aggregates"
        return cls(
            pipeline=read.text("pipeline"),
            root=checkpoint.removesuffix(suffix),
            from_generation=read.integer("from_generation"),
            to_generation=to_generation,
            last_committed_batch=read.integer("last_committed_batch"),
            watermark_ms=read.integer("watermark_ms"),
            window=_window(restart.child("window")),
            restart_batch=restart_batch,
            replay_filter=ReplayFilter(
                window_end_after_ms=read.optional_integer("replay_after_ms"),
                event_time_from_ms=read.optional_integer("replay_from_event_ms"),
            ),
            late_before_event_ms=read.optional_integer("late_before_event_ms"),
            partitions=tuple(partitions),
            notes=tuple(restart.texts("notes")),
            advice=Advice.from_json(read.child("advice")),
            from_signature="",
            to_signature=None,
            parser_digest=None,
            created_at_ms=read.integer("created_at_ms"),
            applied_at_ms=read.optional_integer("applied_at_ms"),
            consumed_at_ms=read.optional_integer("consumed_at_ms"),
        )


def _window(read: JsonFields) -> WindowSpec:
    return WindowSpec(
        duration_ms=read.integer("duration_ms"),
        slide_ms=read.integer("slide_ms"),
        watermark_delay_ms=read.integer("watermark_delay_ms"),
    )


def _replay_filter(text: object) -> ReplayFilter:
    try:
        return ReplayFilter.from_json(text)
    except PlanningError as error:
        raise PlanFormatError(f"{WHAT} field 'replay_filter': {error}") from None


def _offsets(read: JsonFields, field: str) -> dict[PartitionKey, int]:
    try:
        return flatten(parse_offsets(read.text(field), what=field))
    except InvalidOffsetsError as error:
        raise PlanFormatError(f"{WHAT} field {field!r}: {error}") from None


def _signature(read: JsonFields) -> PipelineSignature | None:
    document = read.raw("to_signature")
    if document is None:
        return None
    if not isinstance(document, Mapping):
        raise PlanFormatError(f"{WHAT} field 'to_signature' must be a JSON object")
    try:
        return PipelineSignature.from_json(document)
    except SignatureError as error:
        raise PlanFormatError(f"{WHAT} field 'to_signature': {error}") from None
