"""What `verify` reads and what it reports: the generations' facts, and the typed report.

The facts are what the ledger, the checkpoints and the brokers say, gathered once; the
report is the reconciliation of the written output against the source, a document with a
format version (``--json`` prints it exactly, and :meth:`VerifyReport.from_json` reads it
back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Self

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile
from pyspark_kafka_upgrade._domain.records.history import BatchFacts, CheckpointBatch, FlatOffsets
from pyspark_kafka_upgrade._domain.records.ledger import GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.signature import PipelineSignature
from pyspark_kafka_upgrade._domain.values.json_fields import JsonFields

FORMAT_VERSION = 1


class VerifyReportError(PipelineError):
    """A verify report document that is not one: the message names the field."""


@dataclass(frozen=True, slots=True)
class GenerationFacts:
    """One generation as the ledger, its checkpoint and its plan describe it."""

    generation: int
    status: GenerationStatus
    signature: PipelineSignature
    plan: UpgradePlan | None  # the plan that started it; None for a first generation
    ledger: tuple[BatchFacts, ...]  # ordered by batch id
    checkpoint: tuple[CheckpointBatch, ...]  # the committed batches still retained
    initial_offsets: FlatOffsets | None  # where its first batch began, if the source kept it
    gap_batch_ids: tuple[int, ...] = ()  # batches the ledger says it failed to record


@dataclass(frozen=True, slots=True)
class VerifyFacts:
    pipeline: str
    generations: tuple[GenerationFacts, ...]  # ascending
    earliest: FlatOffsets  # the brokers' earliest offsets now (what retention left)


class Status(StrEnum):
    """What one window and key is, once reconciled. The order is the order of severity."""

    WRITTEN_TWICE = "written twice"
    LOST = "lost"
    DIFFERENT = "different"
    UNCLASSIFIED = "unclassified"
    LATE = "late by design"
    OPEN = "open"
    ABANDONED = "abandoned"  # kept for reading older reports; window-change leftovers are
    # left out of the comparison instead
    EXACT = "exact"

    @property
    def fails(self) -> bool:
        """Whether the upgrade broke its promise here: exit code 1."""
        return self in (Status.WRITTEN_TWICE, Status.LOST, Status.DIFFERENT)


class PairState(StrEnum):
    """What became of one event in one window, from the ledger of the generation that owns
    the window."""

    COUNTED = "counted"
    LATE = "late"  # read by a batch whose lateness bound had passed the window's end
    ARRIVED_AFTER = "arrived after"  # produced after its generation stopped: late by design
    # In a partition its generation never had: added to the topic after the generation's last
    # batch, or of a topic it did not subscribe to. Late by design, as the upgrade's replay
    # filter drops it; a running generation missing a partition of its topics is SKIPPED.
    OUTSIDE = "outside its partitions"
    # After the running generation's position, in a window still open to it: it will read
    # the record, nothing is decided yet (the window is open).
    PENDING = "not read yet"
    SKIPPED = "never read"  # before where the owning generation started reading: lost
    UNKNOWN = "unknown"  # in a ledger gap: cannot say


@dataclass(frozen=True, slots=True)
class EventRef:
    topic: str
    partition: int
    offset: int
    event_time_ms: int
    state: str  # a PairState value
    batch_id: int | None  # the owning generation's batch that read it


@dataclass(frozen=True, slots=True)
class WindowFinding:
    """One window and key that is not exact, with the events behind it."""

    window_start_ms: int
    window_end_ms: int
    keys: Mapping[str, object]
    status: Status
    owner: int | None  # the generation whose window it is; None: no event of the range
    writers: tuple[int, ...]  # the generations that wrote it, once per row
    expected: Mapping[str, object]
    written: Mapping[str, object] | None
    events: tuple[EventRef, ...] = ()
    more_events: int = 0  # events behind it not listed

    def to_json(self) -> dict[str, object]:
        document = asdict(self)
        document["status"] = self.status.value
        document["keys"] = dict(self.keys)
        document["expected"] = dict(self.expected)
        document["written"] = None if self.written is None else dict(self.written)
        document["writers"] = list(self.writers)
        document["events"] = [asdict(event) for event in self.events]
        return document

    @classmethod
    def from_json(cls, data: object) -> Self:
        read = JsonFields(data, "window finding", VerifyReportError)
        written = read.raw("written")
        return cls(
            window_start_ms=read.integer("window_start_ms"),
            window_end_ms=read.integer("window_end_ms"),
            keys=read.mapping("keys"),
            status=_status(read.text("status")),
            owner=read.optional_integer("owner"),
            writers=tuple(_integers(read.raw("writers"), "writers")),
            expected=read.mapping("expected"),
            written=None if written is None else read.mapping("written"),
            events=tuple(
                EventRef(
                    topic=item.text("topic"),
                    partition=item.integer("partition"),
                    offset=item.integer("offset"),
                    event_time_ms=item.integer("event_time_ms"),
                    state=item.text("state"),
                    batch_id=item.optional_integer("batch_id"),
                )
                for item in read.children("events")
            ),
            more_events=read.integer("more_events"),
        )


@dataclass(frozen=True, slots=True)
class QuarantinedRecord:
    topic: str
    partition: int
    offset: int
    reason: str


@dataclass(frozen=True, slots=True)
class DeletedRange:
    """Offsets the range needs that retention already deleted: [first, end)."""

    topic: str
    partition: int
    first: int
    end: int


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The reconciliation of the written output against the source, for one event-time range."""

    pipeline: str
    from_ms: int
    to_ms: int | None  # None: up to what the pipeline has read
    generations: tuple[int, ...]
    counts: Mapping[str, int]  # Status value -> windows
    findings: tuple[WindowFinding, ...]  # every non-exact, non-open window, up to the cap
    more_findings: int  # findings beyond the cap, counted but not listed
    events_read: int
    late_events: int  # (event, window) pairs late by design
    quarantined: int
    quarantined_sample: tuple[QuarantinedRecord, ...]
    deleted: tuple[DeletedRange, ...]
    notes: tuple[str, ...]
    format_version: int = FORMAT_VERSION
    # {"start": offsets JSON, "end": offsets JSON}: what was read back
    offsets_read: Mapping[str, object] = field(default_factory=dict)
    # Committed output that could not be read (missing, another size, unreadable, no
    # access): left out of the comparison, so the windows whose rows it held show as lost or
    # different. A field added within format 1: a document without it has none.
    damaged: tuple[DamagedFile, ...] = ()

    def __post_init__(self) -> None:
        # Every status, zero where none was seen: the report reads the same however it was
        # built, and its JSON round-trips.
        unknown = set(self.counts) - {status.value for status in Status}
        if unknown:
            raise VerifyReportError(f"verify report counts unknown statuses {sorted(unknown)}")
        object.__setattr__(
            self, "counts", {status.value: self.counts.get(status.value, 0) for status in Status}
        )

    @property
    def windows(self) -> int:
        return sum(self.counts.values())

    def count(self, status: Status) -> int:
        return self.counts.get(status.value, 0)

    @property
    def ok(self) -> bool:
        """Nothing lost, written twice or different, and all the committed output read (what
        could not be classified is said, and does not fail the check)."""
        failing = any(self.count(status) for status in Status if status.fails)
        return not failing and not self.damaged

    def to_json(self) -> dict[str, object]:
        document = asdict(self)
        document["counts"] = {status.value: self.count(status) for status in Status}
        document["findings"] = [finding.to_json() for finding in self.findings]
        document["generations"] = list(self.generations)
        document["quarantined_sample"] = [asdict(record) for record in self.quarantined_sample]
        document["deleted"] = [asdict(gone) for gone in self.deleted]
        document["notes"] = list(self.notes)
        document["damaged"] = [file.to_json() for file in self.damaged]
        document["ok"] = self.ok
        return document

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        read = JsonFields(data, "verify report", VerifyReportError)
        version = read.integer("format_version")
        if version < 1:
            raise VerifyReportError(f"verify report format_version {version} is not one")
        if version > FORMAT_VERSION:
            raise VerifyReportError(
                f"the verify report has format version {version}, newer than the "
                f"{FORMAT_VERSION} this version of the library reads"
            )
        return cls(
            pipeline=read.text("pipeline"),
            from_ms=read.integer("from_ms"),
            to_ms=read.optional_integer("to_ms"),
            generations=tuple(_integers(read.raw("generations"), "generations")),
            counts=_counts(read.mapping("counts")),
            findings=tuple(
                WindowFinding.from_json(item) for item in _list(read.raw("findings"), "findings")
            ),
            more_findings=read.integer("more_findings"),
            events_read=read.integer("events_read"),
            late_events=read.integer("late_events"),
            quarantined=read.integer("quarantined"),
            quarantined_sample=tuple(
                QuarantinedRecord(
                    item.text("topic"),
                    item.integer("partition"),
                    item.integer("offset"),
                    item.text("reason"),
                )
                for item in read.children("quarantined_sample")
            ),
            deleted=tuple(
                DeletedRange(
                    item.text("topic"),
                    item.integer("partition"),
                    item.integer("first"),
                    item.integer("end"),
                )
                for item in read.children("deleted")
            ),
            notes=tuple(read.texts("notes")),
            format_version=version,
            offsets_read=read.mapping("offsets_read"),
            damaged=_damaged(read) if read.has("damaged") else (),
        )


def _damaged(read: JsonFields) -> tuple[DamagedFile, ...]:
    return tuple(
        DamagedFile.from_json(item, error=VerifyReportError, where=f"damaged[{index}]")
        for index, item in enumerate(read.items("damaged"))
    )


def _list(value: object, name: str) -> list[object]:
    if not isinstance(value, list):
        raise VerifyReportError(
            f"verify report field {name!r} must be a JSON list, got {type(value).__name__}"
        )
    return value


def _integers(value: object, name: str) -> list[int]:
    items = _list(value, name)
    if not all(type(item) is int for item in items):
        raise VerifyReportError(f"verify report field {name!r} must be a list of integers")
    return [item for item in items if type(item) is int]


def _counts(counts: Mapping[str, object]) -> dict[str, int]:
    for status, count in counts.items():
        if type(count) is not int or count < 0:
            raise VerifyReportError(
                f"verify report field 'counts' has {count!r} windows {status!r}; expected a count"
            )
    return {status: count for status, count in counts.items() if type(count) is int}


def _status(text: str) -> Status:
    try:
        return Status(text)
    except ValueError:
        known = ", ".join(status.value for status in Status)
        raise VerifyReportError(
            f"verify report field 'status' is {text!r}, expected one of {known}"
        ) from None
