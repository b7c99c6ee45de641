"""Topics for tests on a real broker: unique names, creation, records in, records out.

Records carry the partition and CreateTime the test chose, so that a test decides where each
event lands and what time it says.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)

# confluent_kafka.admin is the documented home of these classes, but it re-exports them
# without __all__, which mypy --strict reports; "unused-ignore" keeps this quiet once a
# release declares them.
from confluent_kafka.admin import (  # type: ignore[attr-defined, unused-ignore]
    ConfigResource,
    NewTopic,
)

from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackendError
from pyspark_kafka_upgrade.testing._kafka.clients import Client, client_config, connect_admin
from pyspark_kafka_upgrade.testing._waiting import wait_until

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message

# Message.timestamp() reports this type for timestamps set by the producer (value 1).
CREATE_TIME = TIMESTAMP_CREATE_TIME

_TOPIC_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

# Kafka headers in order; a key may repeat and a value may be null.
Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Record:
    """A record to produce, with its partition and CreateTime chosen by the test."""

    partition: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: Headers | None = None


@dataclass(frozen=True)
class ConsumedRecord:
    """A record as read back from the broker."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    timestamp_type: int


def unique_topic(prefix: str) -> str:
    """A topic name unique to this call, built only from characters Kafka allows."""
    safe_prefix = _TOPIC_UNSAFE.sub("-", prefix).strip("-") or "topic"
    # Kafka's limit is 249 characters; leave room for the suffix.
    return f"{safe_prefix[:200]}-{uuid.uuid4().hex[:10]}"


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    *,
    config: Mapping[str, str] | None = None,
    replication_factor: int = 1,
    timeout: float = 30.0,
    client: Client = None,
) -> None:
    """Create a topic and wait until its metadata shows every partition with a leader.

    ``retention.ms`` is always ``-1``: noida-db deletes records whose CreateTime is older than
    the retention (7 days by default) within seconds, and tests deliberately use old
    timestamps. Real Kafka accepts the same setting.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    topic_config = dict(config or {})
    if topic_config.get("retention.ms", "-1") != "-1":
        raise ValueError(
            "test topics need retention.ms=-1 (noida-db eagerly deletes old records); "
            f"got retention.ms={topic_config['retention.ms']!r}"
        )
    topic_config["retention.ms"] = "-1"

    admin = connect_admin(bootstrap, client)
    futures = admin.create_topics(
        [
            NewTopic(
                name,
                num_partitions=partitions,
                replication_factor=replication_factor,
                config=topic_config,
            )
        ],
        request_timeout=timeout,
    )
    futures[name].result(timeout=timeout)

    def all_partitions_ready() -> bool:
        try:
            topic = admin.list_topics(topic=name, timeout=5).topics.get(name)
        except KafkaException:
            return False
        return (
            topic is not None
            and topic.error is None
            and sorted(topic.partitions) == list(range(partitions))
            and all(p.error is None and p.leader >= 0 for p in topic.partitions.values())
        )

    wait_until(
        all_partitions_ready,
        timeout=timeout,
        interval=0.05,
        message=f"topic {name!r} did not show {partitions} partitions with leaders",
    )


def topic_config(
    bootstrap: str, name: str, *, timeout: float = 30.0, client: Client = None
) -> dict[str, str]:
    """The topic's effective configuration as the broker reports it (DescribeConfigs)."""
    admin = connect_admin(bootstrap, client)
    futures = admin.describe_configs([ConfigResource("topic", name)], request_timeout=timeout)
    entries: dict[str, Any] = next(iter(futures.values())).result(timeout=timeout)
    return {key: entry.value for key, entry in entries.items() if entry.value is not None}


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[Record],
    *,
    timeout: float = 30.0,
    client: Client = None,
) -> None:
    """Produce ``records`` with their explicit partitions and CreateTimes, and flush.

    Raises:
        KafkaBackendError: any record was not acknowledged by the broker.
    """
    producer = Producer(client_config(bootstrap, client))
    failures: list[str] = []
    delivered = 0

    def on_delivery(error: KafkaError | None, message: Message[Any, Any]) -> None:
        nonlocal delivered
        if error is not None:
            failures.append(f"partition {message.partition()} key {message.key()!r}: {error}")
        else:
            delivered += 1

    sent = 0
    deadline = time.monotonic() + timeout
    for record in records:
        while True:
            try:
                producer.produce(
                    topic,
                    value=record.value,
                    key=record.key,
                    partition=record.partition,
                    timestamp=record.timestamp_ms,
                    headers=list(record.headers) if record.headers is not None else None,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                # The local queue is full; serving delivery reports frees space.
                if time.monotonic() >= deadline:
                    raise
                producer.poll(0.1)
        sent += 1
    remaining = producer.flush(max(0.0, deadline - time.monotonic()))
    if remaining or failures or delivered != sent:
        details = "; ".join(failures[:10])
        raise KafkaBackendError(
            f"producing to {topic!r}: {delivered} of {sent} records acknowledged, "
            f"{remaining} still queued, {len(failures)} failed: {details}"
        )


def consume_all(
    bootstrap: str,
    topic: str,
    expected_count: int,
    timeout: float = 30.0,
    client: Client = None,
) -> list[ConsumedRecord]:
    """Read ``topic`` from offset 0 of every partition until ``expected_count`` records arrive.

    Partitions are assigned directly, so no consumer group joins and nothing is committed.
    Records come back sorted by (partition, offset).

    Raises:
        TimeoutError: fewer records arrived before the deadline; the message lists them.
    """
    consumer = Consumer(
        {
            **client_config(bootstrap, client),
            # Required by the client even with manual assignment; unique so that nothing
            # ever shares or inherits committed offsets.
            "group.id": f"test-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
        }
    )
    arrived: list[ConsumedRecord] = []
    try:
        metadata = consumer.list_topics(topic=topic, timeout=timeout)
        topic_metadata = metadata.topics.get(topic)
        if topic_metadata is None or topic_metadata.error or not topic_metadata.partitions:
            raise KafkaBackendError(f"topic {topic!r} has no partitions: {topic_metadata!r}")
        consumer.assign(
            [TopicPartition(topic, partition, 0) for partition in sorted(topic_metadata.partitions)]
        )

        def enough_arrived() -> bool:
            for message in consumer.consume(num_messages=1000, timeout=0.2):
                error = message.error()
                if error is not None:
                    raise KafkaBackendError(f"consuming {topic!r}: {error}")
                arrived.append(_consumed_record(message))
            return len(arrived) >= expected_count

        try:
            # consume() itself blocks for up to 0.2 s, so no extra pause between polls.
            wait_until(
                enough_arrived,
                timeout=timeout,
                interval=0.001,
                message=f"expected {expected_count} records from {topic!r}",
            )
        except TimeoutError as exc:
            shown = "\n".join(map(repr, sorted(arrived, key=_position)[:50]))
            raise TimeoutError(f"{exc}; {len(arrived)} arrived:\n{shown}") from exc
    finally:
        consumer.close()
    return sorted(arrived, key=_position)


def _position(record: ConsumedRecord) -> tuple[int, int]:
    return record.partition, record.offset


def _consumed_record(message: Message[Any, Any]) -> ConsumedRecord:
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    if topic is None or partition is None or offset is None:
        raise KafkaBackendError(f"message without a position: {message!r}")
    timestamp_type, timestamp_ms = message.timestamp()
    return ConsumedRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        key=message.key(),
        value=message.value(),
        timestamp_ms=timestamp_ms,
        timestamp_type=timestamp_type,
    )
