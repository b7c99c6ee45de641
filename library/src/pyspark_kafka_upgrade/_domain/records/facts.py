"""Everything an upgrade decision depends on, read once: the report ``gather`` fills.

``decide`` turns it into a plan, and ``staleness`` compares a reviewed plan with a fresh one,
without reading anything themselves, so both run in unit tests on hand-made facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pyspark_kafka_upgrade._domain.records.history import BatchFacts, CheckpointFacts, FlatOffsets
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.signature import PipelineSignature, signature_digest
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey


@dataclass(frozen=True, slots=True)
class BrokerFacts:
    """What the brokers said when the facts were gathered."""

    subscribed: tuple[PartitionKey, ...]  # the partitions the settings subscribe, now
    earliest: Mapping[PartitionKey, int]  # the first offset still available, per partition
    # The offset after the last record; asked only when the plan counts late records.
    latest: Mapping[PartitionKey, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UpgradeFacts:
    """The old generation as the ledger and its checkpoints left it; the new one as planned."""

    pipeline: str
    root: str  # absolute URI of the pipeline root
    old_generation: int
    old_signature: Mapping[str, object]  # as the old generation recorded it
    old_plan: UpgradePlan | None  # the plan that started the old generation, if one did
    next_generation: int  # a number no generation of the pipeline ever had
    next_sink_location: str  # where the sink puts the next generation's output
    # The current code and settings' signature as they would run on the old generation's
    # directories, which the advisor compares with the one recorded there.
    signature: PipelineSignature
    checkpoint: CheckpointFacts  # the old aggregates query's: what committed, and W
    sink_last_batch: int | None  # the last batch the old output's sink committed (its log)
    ledger: tuple[BatchFacts, ...]  # the old generation's batch records
    gap_batch_ids: tuple[int, ...]  # its ledger gap markers
    stored_initial_offsets: FlatOffsets | None  # the old query's sources/0/0, if any
    quarantine_offsets: FlatOffsets | None  # where the old quarantine query last committed
    new_partition_position: int  # -2 or -1: where the settings start a partition never read
    parser_digest: str  # how records are parsed (``event_parser.parser_digest``)
    broker: BrokerFacts
    now_ms: int

    @property
    def old_signature_digest(self) -> str:
        return signature_digest(self.old_signature)

    @property
    def new_signature(self) -> PipelineSignature:
        """The current code and settings' signature on the next generation's directories."""
        return replace(self.signature, sink_path=self.next_sink_location)

    @property
    def initial_offsets(self) -> FlatOffsets | None:
        """Where the old generation's query began: the offsets its source stored when it
        resolved them (``sources/0/0``), else the plan that started it, whose -2 for a new
        partition says only "earliest", not which offset that was."""
        if self.stored_initial_offsets is not None:
            return self.stored_initial_offsets
        return None if self.old_plan is None else self.old_plan.restart_offsets
