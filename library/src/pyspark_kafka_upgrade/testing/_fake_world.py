"""A pipeline's world without Spark or Kafka: for the upgrade commands' fast tests.

Generation 1 "ran" over a stream of page views: its checkpoints' files (``offsets/N``,
``commits/N``) are written as Spark writes them, its ledger (SQLite) holds one record per
batch and the generation's signature, and a broker stand-in answers the three questions an
upgrade asks (partitions, earliest, latest). Each record's event time is known, so a scan
can be served from memory. Every number follows from the constants below, and the tests
compute what they expect from the events, not from the code under test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pyspark_kafka_upgrade._adapters.ledger.sqlite_store import (
    SqliteOffsetStore,
)
from pyspark_kafka_upgrade._application.generation.signature import (
    derive_signature,
)
from pyspark_kafka_upgrade._application.upgrade.gather import (
    gather,
)
from pyspark_kafka_upgrade._core.planner.decide import (
    ScanRequest,
    ScanResults,
    advise_upgrade,
    batch_level,
    decide,
    scan_request,
)
from pyspark_kafka_upgrade._core.planner.late_records import (
    count_waiting,
)
from pyspark_kafka_upgrade._core.planner.tightening import (
    scan_partition,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.facts import (
    UpgradeFacts,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
)
from pyspark_kafka_upgrade._domain.records.plan import (
    UpgradePlan,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._domain.values.offsets import (
    PartitionKey,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT

PIPELINE = "page-views-test"
TOPIC = "page-views"
BASE_MS = 1_763_805_600_000  # 2025-11-22T10:00:00Z, a multiple of ten minutes
MINUTE_MS = 60_000
DELAY_MS = 5 * MINUTE_MS
PARTITIONS = 2
# Each batch reads RECORDS_PER_BATCH records a partition, one a minute of event time each,
# so batch k holds the events of minutes [10k, 10k + 10) of the stream.
RECORDS_PER_BATCH = 10


@dataclass
class FakeBroker:
    """Partitions and their offsets; ``close`` does nothing, as the world outlives a command."""

    partitions_of: dict[str, int]
    earliest_of: dict[PartitionKey, int] = field(default_factory=dict)
    latest_of: dict[PartitionKey, int] = field(default_factory=dict)

    def partitions(self, topics: Iterable[str], pattern: str | None) -> list[PartitionKey]:
        return sorted(
            (topic, number) for topic in topics for number in range(self.partitions_of[topic])
        )

    def earliest(self, partitions: Iterable[PartitionKey]) -> dict[PartitionKey, int]:
        return {key: self.earliest_of.get(key, 0) for key in partitions}

    def latest(self, partitions: Iterable[PartitionKey]) -> dict[PartitionKey, int]:
        return {key: self.latest_of.get(key, 0) for key in partitions}

    def close(self) -> None:
        return None


@dataclass
class World:
    """Generation 1 of one pipeline after ``batches`` batches, and the records in Kafka."""

    root: Path
    broker: FakeBroker
    # (topic, partition) -> event time (ms) of each offset, in offset order
    records: dict[PartitionKey, list[int]] = field(default_factory=dict)
    batches: int = 0
    # Settings generation 1 ran with, besides the world's own (e.g. its sink).
    ran_with: tuple[str, ...] = ()

    def overrides(self, *more: str) -> list[str]:
        return [
            f"pipeline.name={PIPELINE}",
            f"pipeline.root={self.root / 'pipeline'}",
            "kafka.bootstrap_servers=127.0.0.1:9",
            f"kafka.topics={TOPIC}",
            "kafka.starting_offsets=earliest",
            "kafka.connector=python",
            "window.duration=10 minutes",
            "window.slide=",
            "window.watermark_delay=5 minutes",
            "ledger.store=sqlite",
            f"ledger.location={self.root / 'ledger.sqlite'}",
            *self.ran_with,
            *more,
        ]

    def settings(self, *more: str) -> Settings:
        return load_settings(PROJECT, env={}, overrides=self.overrides(*more)).settings

    @property
    def layout(self) -> GenerationLayout:
        return GenerationLayout(str(self.root / "pipeline"), 1)

    def produce(self, minutes: Iterable[int], partition: int = 0) -> None:
        """Records with these event minutes (from BASE_MS) appended to one partition."""
        key = (TOPIC, partition)
        self.records.setdefault(key, []).extend(BASE_MS + m * MINUTE_MS for m in minutes)
        self.broker.latest_of[key] = len(self.records[key])

    def event_time(self, key: PartitionKey, offset: int) -> int:
        return self.records[key][offset]

    def scan(self, key: PartitionKey, start: int, end: int) -> Iterator[tuple[int, int]]:
        for offset in range(max(start, 0), min(end, len(self.records.get(key, [])))):
            yield offset, self.records[key][offset]

    def run_batch(self) -> None:
        """Generation 1 commits its next batch: checkpoint files, then the ledger record."""
        batch = self.batches
        end = {
            key: min(len(times), (batch + 1) * RECORDS_PER_BATCH)
            for key, times in sorted(self.records.items())
        }
        start = {key: min(len(t), batch * RECORDS_PER_BATCH) for key, t in self.records.items()}
        read = [self.records[key][offset] for key in end for offset in range(start[key], end[key])]
        seen = [self.records[key][offset] for key in end for offset in range(0, start[key])]
        watermark = max(0, max(seen) - DELAY_MS) if seen else 0
        next_watermark = max(0, max([*seen, *read]) - DELAY_MS) if seen or read else 0
        offsets_text = _offsets_json(end)
        checkpoint = Path(self.layout.checkpoint)
        _write(checkpoint / "metadata", json.dumps({"id": "q-1"}))
        metadata = json.dumps(
            {"batchWatermarkMs": watermark, "batchTimestampMs": BASE_MS, "conf": {}},
            separators=(",", ":"),
        )
        _write(checkpoint / "offsets" / str(batch), f"v1\n{metadata}\n{offsets_text}")
        commit = json.dumps({"nextBatchWatermarkMs": next_watermark}, separators=(",", ":"))
        _write(checkpoint / "commits" / str(batch), f"v1\n{commit}")
        with self.store() as store:
            if batch == 0:
                self._record_generation(store)
            store.record_batch(
                BatchRecord(
                    pipeline=PIPELINE,
                    generation=1,
                    batch_id=batch,
                    query_id="q-1",
                    run_id="r-1",
                    batch_timestamp_ms=BASE_MS,
                    start_offsets=None if batch == 0 else _offsets_json(start),
                    end_offsets=offsets_text,
                    batch_watermark_ms=watermark,
                    input_rows=len(read),
                    min_event_time_ms=min(read) if read else None,
                    max_event_time_ms=max(read) if read else None,
                    malformed_rows=0,
                    recorded_at_ms=BASE_MS,
                )
            )
        self.batches += 1

    def store(self) -> SqliteOffsetStore:
        return SqliteOffsetStore(str(self.root / "ledger.sqlite"))

    def _record_generation(self, store: SqliteOffsetStore) -> None:
        signature = derive_signature(self.settings(), self.layout).with_history(None)
        store.record_generation(
            GenerationRecord(
                pipeline=PIPELINE,
                generation=1,
                status=GenerationStatus.RUNNING,
                signature=signature.to_json(),
                plan=None,
                created_at_ms=BASE_MS,
                updated_at_ms=BASE_MS,
            )
        )

    def snapshot(self) -> dict[str, object]:
        """Everything a command could change: the ledger's records and the files on disk."""
        with self.store() as store:
            generations = [g.to_json() for g in store.generations(PIPELINE)]
            batches = [b.to_json() for g in (1, 2, 3) for b in store.batches(PIPELINE, g)]
        files = {
            str(path.relative_to(self.root)): path.read_bytes()
            for path in sorted(self.root.rglob("*"))
            if path.is_file() and path.name != "ledger.sqlite" and "run.lock" not in path.name
        }
        return {"generations": generations, "batches": batches, "files": files}


def make_world(
    tmp_path: Path, *, minutes: int = 40, batches: int = 4, ran_with: tuple[str, ...] = ()
) -> World:
    """Generation 1 read ``minutes`` minutes of events on each partition, in ``batches``
    batches of ten minutes, with the settings ``ran_with`` besides the world's own; nothing
    else waits in Kafka.

    With the defaults, batch 3 ran with the watermark the events through batch 2 set:
    W = 10:29 - 5 min = 10:24. The windows 10:20-10:30 and 10:30-10:40 are open; their
    events start at offset 20 of each partition, which batch 2 began reading.
    """
    world = World(
        root=tmp_path, broker=FakeBroker(partitions_of={TOPIC: PARTITIONS}), ran_with=ran_with
    )
    for partition in range(PARTITIONS):
        world.produce(range(minutes), partition)
    for _ in range(batches):
        world.run_batch()
    return world


def _offsets_json(offsets: dict[PartitionKey, int]) -> str:
    by_topic: dict[str, dict[str, int]] = {}
    for (topic, number), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, {})[str(number)] = offset
    return json.dumps(by_topic, separators=(",", ":"))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# -- Plans on the world, as the commands make them ------------------------------------------

VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
# W of the default world: the last batch ran with the watermark of minute 29, less the delay.
W = BASE_MS + 29 * MINUTE_MS - DELAY_MS


def facts_of(world: World, *overrides: str, latest: bool = True) -> UpgradeFacts:
    with world.store() as store:
        old = store.generation(PIPELINE, 1)
        assert old is not None
        return gather(world.settings(*overrides), store, old, latest=latest, broker=world.broker)


def scanned(world: World, request: ScanRequest) -> ScanResults:
    """The ranges of ``request`` read from the world's records, folded as a scan folds them."""
    return ScanResults(
        replay={
            span.partition: scan_partition(
                span, world.scan(span.partition, span.start, span.end), request.t_min
            )
            for span in request.replay
        },
        waiting={
            span.partition: count_waiting(
                span, world.scan(span.partition, span.start, span.end), request.late_before_event_ms
            )
            for span in request.waiting
        },
    )


def plan_of(
    world: World, facts: UpgradeFacts, *, scan: bool = True, handoff_at_ms: int | None = None
) -> UpgradePlan:
    advice = advise_upgrade(facts)
    level = batch_level(facts, accept_data_loss=False, handoff_at_ms=handoff_at_ms)
    results = scanned(world, scan_request(level, facts)) if scan else None
    return decide(facts, level, advice, results)


def first_feeding_offsets(world: World, t_min: int) -> dict[tuple[str, int], int]:
    """Independently of the planner: each partition's first offset with event time >= t_min."""
    return {
        key: next(offset for offset, time in enumerate(times) if time >= t_min)
        for key, times in world.records.items()
    }
