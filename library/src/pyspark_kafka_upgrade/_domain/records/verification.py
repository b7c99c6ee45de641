"""What `verify` reads and what it reports: the generations' facts, and the typed report.

The facts are what the ledger, the checkpoints and the brokers say, gathered once; the
report is the reconciliation of the written output against the source, a document with a
format version (``--json`` prints it exactly, and :meth:`VerifyReport.from_json` reads it
back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile
from pyspark_kafka_upgrade._domain.records.history import BatchFacts, CheckpointBatch, FlatOffsets
from pyspark_kafka_upgrade._domain.records.ledger import GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.signature import PipelineSignature
from pyspark_kafka_upgrade._domain.values.json_fields import JsonFields
from pyspark_kafka_upgrade._domain.values.json_record import (
    Field,
    Fields,
    FormatVersion,
    JsonRecord,
    Shape,
    Written,
)

FORMAT_VERSION = 1


class VerifyReportError(PipelineError):
    """A verify report document that is not one: the message names the field."""


def _list(value: object, name: str) -> list[object]:
    if not isinstance(value, list):
        raise VerifyReportError(
            f"verify report field {name!r} must be a JSON list, got {type(value).__name__}"
        )
    return value


def _integers(read: JsonFields, key: str) -> tuple[int, ...]:
    items = _list(read.raw(key), key)
    if not all(type(item) is int for item in items):
        raise VerifyReportError(f"verify report field {key!r} must be a list of integers")
    return tuple(item for item in items if type(item) is int)


def _counts(read: JsonFields, key: str) -> dict[str, int]:
    counts = read.mapping(key)
    for status, count in counts.items():
        if type(count) is not int or count < 0:
            raise VerifyReportError(
                f"verify report field 'counts' has {count!r} windows {status!r}; expected a count"
            )
    return {status: count for status, count in counts.items() if type(count) is int}


def _findings(read: JsonFields, key: str) -> tuple[WindowFinding, ...]:
    # Each finding is read as a document of its own: its messages name its own fields.
    return tuple(WindowFinding.from_json(item) for item in _list(read.raw(key), key))


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
class WindowFinding(JsonRecord):
    """One window and key that is not exact, with the events behind it."""

    json_shape = Shape(
        Fields(
            Field(
                "status",
                unknown="verify report field 'status' is {value!r}, expected one of {allowed}",
            ),
            Field("writers", read=_integers),
        ),
        what="window finding",
        error=VerifyReportError,
    )

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
class VerifyReport(JsonRecord):
    """The reconciliation of the written output against the source, for one event-time range."""

    json_shape = Shape(
        Fields(
            Field("generations", read=_integers),
            Field("counts", read=_counts),
            Field("findings", read=_findings),
            FormatVersion(
                FORMAT_VERSION,
                newer="the verify report has format version {version}, newer than the {current} "
                "this version of the library reads",
                older="verify report format_version {version} is not one",
            ),
            Field("damaged", absent=()),
        ),
        Written("ok"),
        what="verify report",
        error=VerifyReportError,
    )

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
