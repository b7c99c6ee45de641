"""Kafka offsets in the JSON form Spark's built-in Kafka source writes.

``{"<topic>":{"<partition>":<next offset>}}``: topics sorted, partitions in numeric order,
compact separators. The same text appears in the checkpoint, the ledger, a plan and the
``startingOffsets`` option, so two offsets compare equal exactly when their texts do.

Pure: standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.values.json_text import json_value

# topic -> partition -> the offset of the next record to read
Offsets = Mapping[str, Mapping[int, int]]
PartitionKey = tuple[str, int]
EXAMPLE = '{"topic":{"0":42}}'


class InvalidOffsetsError(PipelineError, ValueError):
    """Text or a value that is not offsets JSON of the form ``{"topic":{"0":42}}``."""


def format_offsets(offsets: Offsets) -> str:
    """The canonical text: what the built-in source writes to ``offsets/N``."""
    return json.dumps(offsets_to_json_object(offsets), separators=(",", ":"))


def offsets_to_json_object(offsets: Offsets) -> dict[str, dict[str, int]]:
    """A JSON-ready dict whose key order is canonical, so ``json.dumps`` of it is stable."""
    return {
        topic: {str(partition): offsets[topic][partition] for partition in sorted(offsets[topic])}
        for topic in sorted(offsets)
    }


def parse_offsets(text: str, *, what: str = "offsets") -> dict[str, dict[int, int]]:
    """Parse offsets JSON; ``what`` names the value in the error (e.g. ``startingOffsets``)."""
    value = json_value(
        text,
        lambda error: InvalidOffsetsError(
            f"{what} is not valid JSON ({error.msg} at character {error.pos}): {text!r}; "
            f"expected e.g. {EXAMPLE}"
        ),
    )
    return offsets_from_json_object(value, what=what)


def offsets_from_json_object(value: object, *, what: str = "offsets") -> dict[str, dict[int, int]]:
    """Check a decoded JSON value (string partition keys) and return it with int keys.

    Offsets are not range-checked: ``startingOffsets`` legitimately uses -2 and -1.
    """
    if not isinstance(value, dict):
        raise InvalidOffsetsError(f"{what} must be a JSON object like {EXAMPLE}, got {value!r}")
    parsed: dict[str, dict[int, int]] = {}
    for topic, partitions in value.items():
        if not isinstance(partitions, dict):
            raise InvalidOffsetsError(
                f"{what}: topic {topic!r} must map partitions to offsets, got {partitions!r}"
            )
        parsed[topic] = {}
        for partition, offset in partitions.items():
            number = _partition_number(partition)
            # bool is an int subclass; true is not an offset.
            if number is None or not isinstance(offset, int) or isinstance(offset, bool):
                raise InvalidOffsetsError(
                    f"{what}: topic {topic!r} has {partition!r}: {offset!r}; partitions must "
                    'be non-negative integers and offsets integers, e.g. {"0":42}'
                )
            parsed[topic][number] = offset
    return unflatten(flatten(parsed))


def _partition_number(key: object) -> int | None:
    if isinstance(key, str) and key.isdecimal() and key.isascii():
        return int(key)
    return None


def flatten(offsets: Offsets) -> dict[PartitionKey, int]:
    """``{(topic, partition): offset}``, in canonical order."""
    return {
        (topic, partition): offsets[topic][partition]
        for topic in sorted(offsets)
        for partition in sorted(offsets[topic])
    }


def unflatten(offsets: Mapping[PartitionKey, int]) -> dict[str, dict[int, int]]:
    """The nested form of ``{(topic, partition): offset}``, in canonical order.

    A topic appears only with at least one partition.
    """
    nested: dict[str, dict[int, int]] = {}
    for topic, partition in sorted(offsets):
        nested.setdefault(topic, {})[partition] = offsets[(topic, partition)]
    return nested


def min_offsets(offsets: Iterable[Offsets]) -> dict[str, dict[int, int]]:
    """Per partition, the smallest offset among the inputs that name that partition."""
    smallest: dict[PartitionKey, int] = {}
    for each in offsets:
        for key, offset in flatten(each).items():
            smallest[key] = min(offset, smallest.get(key, offset))
    return unflatten(smallest)


def is_at_or_before(earlier: Offsets, later: Offsets) -> bool:
    """Whether every partition of ``earlier`` is in ``later`` at the same or a higher offset."""
    later_flat = flatten(later)
    return all(
        key in later_flat and offset <= later_flat[key] for key, offset in flatten(earlier).items()
    )
