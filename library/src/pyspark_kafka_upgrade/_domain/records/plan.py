"""The upgrade plan: one typed record, reviewed as a file, applied exactly, read by `run`.

Each fact is held once. Totals (records to replay, late records, amplification) and forms
derived for Spark (``startingOffsets`` text) are properties computed from the facts, never
stored beside them. The JSON form is what ``upgrade plan --out`` writes, what the ledger keeps
for the generation the plan starts, and what ``--json`` prints; ``from_json`` refuses a
document of a newer format, or one that is not a plan, with one line naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Self

from pyspark_kafka_upgrade._domain.records.advice import Advice
from pyspark_kafka_upgrade._domain.records.handoff import Handoff
from pyspark_kafka_upgrade._domain.records.per_partition import known_total
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
from pyspark_kafka_upgrade._domain.values.json_record import (
    Field,
    FormatVersion,
    JsonRecord,
    Shape,
    Written,
    read_record,
)
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


def _replay_filter(read: JsonFields, key: str) -> ReplayFilter:
    try:
        return ReplayFilter.parse(read.raw(key))
    except PlanningError as error:
        raise PlanFormatError(f"{WHAT} field {key!r}: {error}") from None


def _signature(read: JsonFields, key: str) -> PipelineSignature | None:
    """The signature planned for: a document of its own, refused as part of the plan."""
    document = read.raw(key)
    if document is None:
        return None
    if not isinstance(document, Mapping):
        raise PlanFormatError(f"{WHAT} field {key!r} must be a JSON object")
    try:
        return PipelineSignature.from_json(document)
    except SignatureError as error:
        raise PlanFormatError(f"{WHAT} field {key!r}: {error}") from None


_FORMAT = FormatVersion(
    FORMAT_VERSION,
    newer="the plan has format version {version}, newer than the {current} this version of "
    "the pipeline reads: apply it with the version that wrote it",
    older=WHAT + " format version {version} does not exist",
    newer_error=PlanFormatVersionError,
)


@dataclass(frozen=True, slots=True)
class ReplayScan(JsonRecord):
    """What the tightening scan of one partition's batch-level replay range counted."""

    batch_level_offset: int  # where the batch-level plan restarted it; the scan began here
    scanned_records: int
    malformed_records: int
    unsure_records: int  # could not be judged without Spark: taken as feeding
    feeding_records: int | None  # event time at or after T_min; None: not counted
    replayed_records: int  # from the restart offset on: what the new generation reads again

    @classmethod
    def of(cls, scan: PartitionScan) -> Self:
        # Every field is one of the scan's, under the same name: the plan keeps its counts.
        return cls(**{field.name: getattr(scan, field.name) for field in fields(cls)})


@dataclass(frozen=True, slots=True)
class PartitionRestart(JsonRecord):
    """One partition: where both queries of the new generation start it, and why.

    Its document holds its reason and counts; its offsets are in the plan's three offsets
    texts (:meth:`_OffsetMaps.partition` reads it with them).
    """

    json_shape = Shape(
        "topic",
        "partition",
        Field("kind", unknown=WHAT + " partition kind {value!r} is not one this version knows"),
        "reason",
        "lost_records",
        "replay_scan",
        "waiting_scan",
    )

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

    def partition(self, read: JsonFields) -> PartitionRestart:
        """One of the plan's partitions, with its offsets from these texts."""
        topic, number = read.text("topic"), read.integer("partition")
        key = (topic, number)
        waiting = read.optional_child("waiting_scan")
        made = read_record(
            PartitionRestart,
            read,
            topic=topic,
            partition=number,
            restart_offset=self.restart.get(key),
            quarantine_offset=self.quarantine.get(key),
            old_end_offset=self.old_end.get(key),
            waiting_scan=None
            if waiting is None
            else read_record(WaitingScan, waiting, partition=key),
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
class UpgradePlan(JsonRecord):
    """Everything the move from one generation to the next depends on (DESIGN, "Plan")."""

    json_shape = Shape(
        _FORMAT,
        "pipeline",
        "root",
        "from_generation",
        "to_generation",
        "last_committed_batch",
        "watermark_ms",
        "window",
        "restart_batch",
        Field("replay_filter", write=ReplayFilter.describe, read=_replay_filter),
        Written("restart_offsets", "starting_offsets"),
        Written("quarantine_offsets", "quarantine_starting_offsets"),
        Written("old_end_offsets", lambda plan: format_offsets(unflatten(plan.old_end_offsets))),
        # The estimate DESIGN asks the plan to state; derived, and checked when read.
        Written("records_to_replay"),
        "late_before_event_ms",
        "partitions",
        "notes",
        "advice",
        "from_signature",
        Field("to_signature", read=_signature),
        "parser_digest",
        "created_at_ms",
        "applied_at_ms",
        "consumed_at_ms",
        # Added within format version 1: a plan without it is an ordinary upgrade.
        Field("handoff", absent=None),
        what=WHAT,
        error=PlanFormatError,
    )

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
    # A handoff at C (W is C): the old generation runs on beside the new one and writes the
    # windows through C. None: an ordinary upgrade, the old generation stopped at W.
    handoff: Handoff | None = None
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
        return known_total(p.records_to_replay for p in self.partitions if p.subscribed)

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
        """This plan as ``plan --out`` wrote it: before apply and run stamped it, and before
        the old generation answered its handoff."""
        handoff = None if self.handoff is None else Handoff(self.handoff.boundary_ms)
        return replace(self, applied_at_ms=None, consumed_at_ms=None, handoff=handoff)

    @classmethod
    def from_json(cls, data: object) -> Self:
        read = JsonFields(data, WHAT, PlanFormatError)
        if not read.has("format_version") and read.has("restart"):
            return cls._legacy(read)
        version = _FORMAT.read(read)
        offsets = _OffsetMaps.read(read)
        partitions = tuple(offsets.partition(p) for p in read.children("partitions"))
        if [p.key for p in partitions] != offsets.partitions():
            raise PlanFormatError(
                f"{WHAT}: the partitions listed are not those its offsets texts name"
            )
        plan = read_record(cls, read, format_version=version, partitions=partitions)
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
            window=read_record(WindowSpec, restart.child("window")),
            restart_batch=restart_batch,
            replay_filter=ReplayFilter(
                window_end_after_ms=read.optional_integer("replay_after_ms"),
                event_time_from_ms=read.optional_integer("replay_from_event_ms"),
            ),
            late_before_event_ms=read.optional_integer("late_before_event_ms"),
            partitions=tuple(partitions),
            notes=tuple(restart.texts("notes")),
            advice=read_record(Advice, read.child("advice")),
            from_signature="",
            to_signature=None,
            parser_digest=None,
            created_at_ms=read.integer("created_at_ms"),
            applied_at_ms=read.optional_integer("applied_at_ms"),
            consumed_at_ms=read.optional_integer("consumed_at_ms"),
        )


def _offsets(read: JsonFields, field: str) -> dict[PartitionKey, int]:
    try:
        return flatten(parse_offsets(read.text(field), what=field))
    except InvalidOffsetsError as error:
        raise PlanFormatError(f"{WHAT} field {field!r}: {error}") from None
