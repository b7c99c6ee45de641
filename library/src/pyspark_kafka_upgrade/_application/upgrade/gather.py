"""Read everything an upgrade decision depends on, once, into ``facts.UpgradeFacts``.

The ledger (the old generation's records), the old checkpoints (through ``storage``, no JVM),
what its sink committed (the ``Sink``'s log alone, not the committed files it names), the
brokers (partitions and offsets, one confluent-kafka client), and the signature the current
code and settings build (``generation.signature``, no JVM). Nothing here decides anything;
``decide`` and ``staleness`` do, on what this returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from pyspark_kafka_upgrade._adapters.checkpoint.reader import checkpoint_facts, read_checkpoint
from pyspark_kafka_upgrade._adapters.kafka.connector import kafka_source_options, open_metadata
from pyspark_kafka_upgrade._adapters.kafka.initial_offsets import load_initial_offsets
from pyspark_kafka_upgrade._adapters.kafka.options import SourceOptions
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._application.generation.signature import derive_signature
from pyspark_kafka_upgrade._core.formats.format_errors import CheckpointError
from pyspark_kafka_upgrade._core.query.event_parser import parser_digest
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.records.facts import BrokerFacts, UpgradeFacts
from pyspark_kafka_upgrade._domain.records.history import (
    FlatOffsets,
    ledger_facts,
)
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.clock import now_ms
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, flatten, parse_offsets


class Broker(Protocol):
    """The three questions an upgrade asks the brokers; ``KafkaMetadata`` answers them."""

    def partitions(self, topics: Iterable[str], pattern: str | None) -> list[PartitionKey]: ...

    def earliest(self, partitions: Iterable[PartitionKey]) -> dict[PartitionKey, int]: ...

    def latest(self, partitions: Iterable[PartitionKey]) -> dict[PartitionKey, int]: ...

    def close(self) -> None: ...


def source_options(settings: Settings) -> SourceOptions:
    """The Kafka client settings both connectors read with, in the pykafka source's form."""
    return kafka_source_options(settings.kafka)


def open_broker(settings: Settings) -> Broker:
    return open_metadata(settings.kafka, purpose="planner")


def next_generation(store: OffsetStore, pipeline: str) -> int:
    """A number no generation of ``pipeline`` ever had: directories are never reused."""
    return max((g.generation for g in store.generations(pipeline)), default=0) + 1


def gather(
    settings: Settings,
    store: OffsetStore,
    old: GenerationRecord,
    *,
    latest: bool,
    next_number: int | None = None,
    broker: Broker | None = None,
) -> UpgradeFacts:
    """The facts of an upgrade from ``old``; ``latest`` also asks where each partition ends
    now (for the late-record count). ``next_number`` overrides the next free generation
    number, for an apply that resumes the one it recorded already."""
    root = absolute_uri(settings.pipeline.root)
    layout = GenerationLayout(root, old.generation)
    state = read_checkpoint(layout.checkpoint)
    checkpoint = checkpoint_facts(state)
    # Only the sink's log: the plan rests on which batches the sink committed, not on their
    # files. A log this user may not read is one line naming the generation (IntegrityError).
    sink = open_sink(settings.sink, root)
    signature = derive_signature(settings, layout)
    sink_last_batch = sink.last_committed_batch(old.generation)
    ledger = ledger_facts(store.batches(old.pipeline, old.generation))
    stored = load_initial_offsets(layout.initial_offsets)
    initial = None if stored is None else flatten(stored)
    number = next_number or next_generation(store, old.pipeline)
    known = {key for batch in checkpoint.batches for key in batch.end_offsets}
    known |= {key for batch in ledger for key in batch.end_offsets}
    broker_facts = _ask_broker(settings, broker, known | set(initial or {}), latest=latest)
    return UpgradeFacts(
        pipeline=old.pipeline,
        root=root,
        old_generation=old.generation,
        old_signature=old.signature,
        old_plan=None if old.plan is None else UpgradePlan.from_json(old.plan),
        next_generation=number,
        next_sink_location=sink.location(number),
        signature=signature,
        checkpoint=checkpoint,
        sink_last_batch=sink_last_batch,
        ledger=ledger,
        gap_batch_ids=tuple(
            gap.batch_id
            for gap in store.gaps(old.pipeline, old.generation)
            if gap.batch_id is not None
        ),
        stored_initial_offsets=initial,
        quarantine_offsets=_quarantine_offsets(layout),
        new_partition_position=-1 if settings.kafka.starting_offsets.strip() == "latest" else -2,
        parser_digest=parser_digest(
            settings.project.events,
            time_source=settings.events.time_source,
            time_field=settings.events.time_field,
            max_value_bytes=settings.events.max_value_bytes,
        ),
        broker=broker_facts,
        now_ms=now_ms(),
    )


def _ask_broker(
    settings: Settings, broker: Broker | None, known: set[PartitionKey], *, latest: bool
) -> BrokerFacts:
    client = broker or open_broker(settings)
    try:
        subscribed = tuple(client.partitions(settings.kafka.topics, None))
        earliest = client.earliest(known | set(subscribed))
        ends = client.latest(subscribed) if latest else {}
    finally:
        if broker is None:
            client.close()
    return BrokerFacts(subscribed=subscribed, earliest=earliest, latest=ends)


def _quarantine_offsets(layout: GenerationLayout) -> FlatOffsets | None:
    """Where the old quarantine query stopped: the new one goes on from there, exactly."""
    try:
        last = read_checkpoint(layout.quarantine_checkpoint).last_committed
    except CheckpointError:
        return None
    if last is None or last.kafka_offsets is None:
        return None
    return flatten(parse_offsets(last.kafka_offsets))
