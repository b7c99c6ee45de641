"""The driver side's questions to the brokers: which partitions exist, and where they start and end.

One confluent-kafka consumer answers them all. It is only assigned nothing and asked for
metadata, so it never joins a consumer group and never commits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import KafkaBrokerError, SourceOptionError
from pyspark_kafka_upgrade._adapters.kafka.options import EARLIEST, KAFKA_PREFIX, LATEST
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey

# Kafka's own topics; a pattern subscription skips them, as Java's consumer does by default.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
_PROPERTY_IN_MESSAGE = re.compile(r'property "([^"]+)"')


class KafkaMetadata:
    """Partition listing and offset lookups, each one batched request."""

    def __init__(self, client_config: Mapping[str, str], group_id: str, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        # A kafka.group.id the user set wins (brokers may authorise by group); nothing is
        # ever committed under it.
        self._consumer = create_consumer({"group.id": group_id, **client_config})

    def close(self) -> None:
        self._consumer.close()

    def partitions(self, topics: Iterable[str], pattern: str | None) -> list[PartitionKey]:
        """The partitions of the subscribed topics that exist now, in canonical order.

        A subscribed topic that does not exist (yet) has no partitions, as with the built-in.
        """
        try:
            metadata = self._consumer.list_topics(timeout=self._timeout_s)
        except KafkaException as error:
            raise KafkaBrokerError(f"cannot list the topics: {_reason(error)}") from None
        wanted = set(topics)
        found: list[PartitionKey] = []
        for name, topic in metadata.topics.items():
            if topic.error is not None:
                continue
            if pattern is None:
                if name not in wanted:
                    continue
            elif name in INTERNAL_TOPICS or not re.fullmatch(pattern, name):
                continue
            found.extend((name, partition) for partition in topic.partitions)
        return sorted(found)

    def earliest(self, partitions: Iterable[PartitionKey]) -> dict[PartitionKey, int]:
        """The first available offset of each partition that still exists."""
        return self._list_offsets(dict.fromkeys(partitions, EARLIEST), "earliest")

    def latest(self, partitions: Iterable[PartitionKey]) -> dict[PartitionKey, int]:
        """The offset after the last record of each partition that still exists."""
        return self._list_offsets(dict.fromkeys(partitions, LATEST), "latest")

    def offsets_for_timestamps(
        self, timestamps: Mapping[PartitionKey, int]
    ) -> dict[PartitionKey, int | None]:
        """The first offset whose timestamp is at or after the given one; None if none is."""
        found = self._list_offsets(timestamps, "by timestamp")
        return {key: found[key] if found.get(key, -1) >= 0 else None for key in timestamps}

    def _list_offsets(
        self, query: Mapping[PartitionKey, int], what: str
    ) -> dict[PartitionKey, int]:
        # ListOffsets takes -2 and -1 as "earliest" and "latest" in place of a timestamp.
        if not query:
            return {}
        request = [
            TopicPartition(topic, partition, value) for (topic, partition), value in query.items()
        ]
        try:
            answers = self._consumer.offsets_for_times(request, timeout=self._timeout_s)
        except KafkaException as error:
            raise KafkaBrokerError(f"cannot look up {what} offsets: {_reason(error)}") from None
        offsets: dict[PartitionKey, int] = {}
        for answer in answers:
            failure = answer.error
            if failure is not None:
                if failure.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue  # deleted meanwhile: the caller treats it as gone
                raise KafkaBrokerError(
                    f"cannot look up {what} offsets of topic {answer.topic!r} partition "
                    f"{answer.partition}: {failure.str()}"
                )
            offsets[(answer.topic, answer.partition)] = answer.offset
        return offsets


def create_consumer(config: Mapping[str, Any]) -> Consumer:
    """A consumer that never commits; a bad kafka.* option is reported under its name."""
    try:
        return Consumer(
            {
                # librdkafka defaults to read_committed; Java's client and so the built-in
                # source read uncommitted, and their latest offset is the high watermark.
                "isolation.level": "read_uncommitted",
                **config,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
            }
        )
    except KafkaException as error:
        reason = _reason(error)
        match = _PROPERTY_IN_MESSAGE.search(reason)
        option = KAFKA_PREFIX + match.group(1) if match else KAFKA_PREFIX + "*"
        raise SourceOptionError(option, f"the Kafka client refused it: {reason}") from None


def _reason(error: KafkaException) -> str:
    detail = error.args[0] if error.args else error
    return detail.str() if isinstance(detail, KafkaError) else str(detail)
