"""The Kafka stream a job reads, from either connector, with the same options and schema.

The pip-only source (``pykafka``) takes the built-in JVM connector's option names and
meanings, so the settings map onto one set of options and the rest of the job cannot
tell which connector read the records. Neither connector commits offsets to Kafka:
progress lives in the checkpoint.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade._adapters.kafka.access import check_access
from pyspark_kafka_upgrade._adapters.kafka.credentials import login_options
from pyspark_kafka_upgrade._adapters.kafka.kafka_metadata import KafkaMetadata
from pyspark_kafka_upgrade._adapters.kafka.options import (
    BOOTSTRAP_SERVERS,
    ENDING_OFFSETS,
    FAIL_ON_DATA_LOSS,
    INITIAL_OFFSETS_LOCATION,
    KAFKA_PREFIX,
    MAX_OFFSETS_PER_TRIGGER,
    STARTING_OFFSETS,
    SUBSCRIBE,
    SourceOptions,
    parse_options,
)
from pyspark_kafka_upgrade._core.settings import KafkaSettings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.values.catalog import SOURCE_FORMATS, Connector
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, format_offsets, unflatten

if TYPE_CHECKING:
    # Types only: `upgrade plan` opens Kafka through this module and never starts Spark.
    from pyspark.sql import DataFrame, SparkSession

# The built-in source names the partitions of a batch read this way; a subscription would
# need every partition of the topics in both offset documents.
ASSIGN = "assign"


def read_kafka_stream(
    spark: SparkSession,
    kafka: KafkaSettings,
    *,
    starting_offsets: str | None = None,
    initial_offsets_location: str | None = None,
) -> DataFrame:
    """The streaming DataFrame of ``kafka.topics``, read by the configured connector.

    ``starting_offsets`` replaces the settings' value (an upgrade passes exact JSON
    offsets). ``initial_offsets_location`` is where the Python source keeps the offsets it
    resolved first, so a restart before the first commit cannot skip records; the built-in
    source keeps them in its checkpoint and ignores it.
    """
    if kafka.connector == "python":
        # Imported here: the module pulls in confluent-kafka, which builtin jobs never need.
        from pyspark_kafka_upgrade._adapters.kafka.pykafka import PyKafkaDataSource

        # Registering again replaces the registration with the same class: harmless.
        spark.dataSource.register(PyKafkaDataSource)
    options = kafka_read_options(
        kafka,
        starting_offsets=starting_offsets,
        initial_offsets_location=initial_offsets_location,
    )
    return spark.readStream.format(source_format(kafka.connector)).options(**options).load()


def read_kafka_range(
    spark: SparkSession,
    kafka: KafkaSettings,
    start: Mapping[PartitionKey, int],
    end: Mapping[PartitionKey, int],
) -> DataFrame:
    """A batch DataFrame of the records from ``start`` (inclusive) to ``end`` (exclusive), per
    partition, read by the configured connector, with the stream's schema.

    Offsets already deleted are skipped, not an error: the caller says which they were.
    """
    if kafka.connector == "python":
        from pyspark_kafka_upgrade._adapters.kafka.pykafka import PyKafkaDataSource

        spark.dataSource.register(PyKafkaDataSource)
    options = kafka_read_options(kafka, starting_offsets=format_offsets(unflatten(start)))
    options[ENDING_OFFSETS] = format_offsets(unflatten(end))
    options[FAIL_ON_DATA_LOSS] = "false"
    options.pop(MAX_OFFSETS_PER_TRIGGER, None)
    if kafka.connector == "builtin":
        del options[SUBSCRIBE]
        partitions: dict[str, list[int]] = {}
        for topic, partition in sorted(end):
            partitions.setdefault(topic, []).append(partition)
        options[ASSIGN] = json.dumps(partitions, separators=(",", ":"))
    return spark.read.format(source_format(kafka.connector)).options(**options).load()


def source_format(connector: Connector) -> str:
    return SOURCE_FORMATS[connector]


def kafka_read_options(
    kafka: KafkaSettings,
    *,
    starting_offsets: str | None = None,
    initial_offsets_location: str | None = None,
) -> dict[str, str]:
    """The reader options for ``kafka``: the built-in connector's names, for both connectors."""
    options = {
        BOOTSTRAP_SERVERS: kafka.bootstrap_servers,
        SUBSCRIBE: ",".join(kafka.topics),
        STARTING_OFFSETS: kafka.starting_offsets if starting_offsets is None else starting_offsets,
        FAIL_ON_DATA_LOSS: "true" if kafka.fail_on_data_loss else "false",
    }
    if kafka.max_offsets_per_trigger > 0:
        options[MAX_OFFSETS_PER_TRIGGER] = str(kafka.max_offsets_per_trigger)
    for key, value in kafka.options.items():
        # Accept the key with or without the prefix rather than pass "kafka.kafka.x", which
        # the client would ignore with no more than a warning.
        name = KAFKA_PREFIX + key.removeprefix(KAFKA_PREFIX)
        if name == BOOTSTRAP_SERVERS:
            raise ConfigError(
                f"kafka.options sets {key!r}, which would override kafka.bootstrap_servers; "
                "set kafka.bootstrap_servers instead"
            )
        options[name] = value
    options.update(login_options(kafka))
    if initial_offsets_location is not None and kafka.connector == "python":
        options[INITIAL_OFFSETS_LOCATION] = initial_offsets_location
    return options


def kafka_source_options(kafka: KafkaSettings) -> SourceOptions:
    """The Kafka client settings both connectors read with, in the pykafka source's form."""
    return parse_options(kafka_read_options(kafka))


def check_kafka_access(kafka: KafkaSettings) -> None:
    """Refuse in one line, within seconds, a login or an ACL that cannot read the topics."""
    _check_access(kafka_source_options(kafka))


def _check_access(options: SourceOptions) -> None:
    check_access(
        options.client_config,
        options.topics,
        f"{options.group_id_prefix}-access-{uuid.uuid4().hex}",
    )


def open_metadata(kafka: KafkaSettings, *, purpose: str) -> KafkaMetadata:
    """A client for the brokers' partitions and offsets, as the connectors would connect,
    once :func:`check_kafka_access` found that they can."""
    options = kafka_source_options(kafka)
    _check_access(options)
    return KafkaMetadata(
        options.client_config,
        f"{options.group_id_prefix}-{purpose}-{uuid.uuid4().hex}",
        options.poll_timeout_ms / 1000,
    )
