"""Turn the starting position a user asked for into offsets for every partition, once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import (
    SourceOptionError,
    StartingOffsetsError,
)
from pyspark_kafka_upgrade._adapters.kafka.kafka_metadata import KafkaMetadata
from pyspark_kafka_upgrade._adapters.kafka.options import (
    EARLIEST,
    LATEST,
    STARTING_OFFSETS,
    STARTING_OFFSETS_BY_TIMESTAMP,
    STARTING_TIMESTAMP_STRATEGY,
    StartFromOffsets,
    StartFromPosition,
    StartFromTimestamps,
    StartingPosition,
)
from pyspark_kafka_upgrade._domain.values.offsets import Offsets, PartitionKey, flatten, unflatten


def resolve_starting_offsets(
    starting: StartingPosition, partitions: Sequence[PartitionKey], metadata: KafkaMetadata
) -> dict[str, dict[int, int]]:
    """Offsets for exactly ``partitions``, the subscribed partitions that exist now."""
    if isinstance(starting, StartFromPosition):
        if starting.position == "earliest":
            return unflatten(metadata.earliest(partitions))
        return unflatten(metadata.latest(partitions))
    if isinstance(starting, StartFromOffsets):
        return _from_offsets(starting.offsets, partitions, metadata)
    return _from_timestamps(starting, partitions, metadata)


def _from_offsets(
    offsets: Offsets, partitions: Sequence[PartitionKey], metadata: KafkaMetadata
) -> dict[str, dict[int, int]]:
    wanted = flatten(offsets)
    _require_every_partition(
        STARTING_OFFSETS, wanted.keys(), partitions, "-2 for earliest, -1 for latest"
    )
    earliest = metadata.earliest(key for key, offset in wanted.items() if offset == EARLIEST)
    latest = metadata.latest(key for key, offset in wanted.items() if offset == LATEST)
    resolved = {}
    for key, offset in wanted.items():
        if offset == EARLIEST:
            resolved[key] = earliest[key]
        elif offset == LATEST:
            resolved[key] = latest[key]
        else:
            # Not checked against the partition's range here: an offset that is gone or not
            # yet written is reported as data loss when the first batch is planned or read.
            resolved[key] = offset
    return unflatten(resolved)


def _from_timestamps(
    starting: StartFromTimestamps, partitions: Sequence[PartitionKey], metadata: KafkaMetadata
) -> dict[str, dict[int, int]]:
    if starting.per_partition is not None:
        timestamps = flatten(starting.per_partition)
        _require_every_partition(STARTING_OFFSETS_BY_TIMESTAMP, timestamps.keys(), partitions, "")
    else:
        timestamps = dict.fromkeys(partitions, starting.every_partition or 0)
    found = metadata.offsets_for_timestamps(timestamps)
    missing = sorted(key for key, offset in found.items() if offset is None)
    latest = metadata.latest(missing) if starting.when_none_found == "latest" else {}
    resolved = {}
    for key, offset in found.items():
        if offset is not None:
            resolved[key] = offset
        elif key in latest:
            resolved[key] = latest[key]
        else:
            topic, partition = key
            raise StartingOffsetsError(
                f"topic {topic!r} partition {partition} has no record at or after timestamp "
                f"{timestamps[key]}; set {STARTING_TIMESTAMP_STRATEGY}=latest to start such "
                "partitions at their latest offset"
            )
    return unflatten(resolved)


def _require_every_partition(
    option: str, named: Iterable[PartitionKey], partitions: Sequence[PartitionKey], hint: str
) -> None:
    # The built-in source insists on the same, so a forgotten partition is not silently
    # started somewhere the user did not choose.
    named_set = set(named)
    existing = set(partitions)
    if named_set == existing:
        return
    missing = ", ".join(f"{t}:{p}" for t, p in sorted(existing - named_set)) or "none"
    unknown = ", ".join(f"{t}:{p}" for t, p in sorted(named_set - existing)) or "none"
    advice = f" (use {hint})" if hint else ""
    raise SourceOptionError(
        option,
        f"must name every partition of the subscribed topics{advice}; missing: {missing}; "
        f"not subscribed or not existing: {unknown}",
    )
