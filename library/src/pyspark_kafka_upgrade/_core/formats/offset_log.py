"""``offsets/N``: what batch N reads, and the watermark it runs with. Written before it runs.

Version 1, every Spark so far::

    v1
    {"batchWatermarkMs":7000,"batchTimestampMs":1700000000000,"conf":{...}}
    {"page-views":{"0":20,"1":25}}      one line per source, in the query's source order
    -                                   a source with no offset yet

Version 2, Spark's offset map for named sources (source evolution; written only when a query
opts in through ``spark.sql.streaming.offsetLog.formatVersion`` or enables source
evolution)::

    v2
    {"batchWatermarkMs":7000,"batchTimestampMs":...,"conf":{...},"sourceMetadataInfo":{...}}
    0:{"page-views":{"0":20,"1":25}}    <source id>:<offset>, in no particular order
    1:-

The metadata line is required in v2; in v1 an empty one stands for zeros, as in Spark.

Offsets are kept as canonical JSON when they have the Kafka shape (the built-in source writes
them compact, the Python source with ``json.dumps`` spacing; both become the same text).
Other sources (files, rate) keep their raw text and are marked as not Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_kafka_upgrade._core.formats.format_errors import CorruptCheckpointError
from pyspark_kafka_upgrade._core.formats.log_files import (
    integer_field,
    parse_json_object,
    parse_version,
    split_lines,
)
from pyspark_kafka_upgrade._domain.values.json_record import Field, Fields, Shape
from pyspark_kafka_upgrade._domain.values.json_text import json_value
from pyspark_kafka_upgrade._domain.values.offsets import (
    InvalidOffsetsError,
    PartitionKey,
    flatten,
    format_offsets,
    offsets_from_json_object,
    parse_offsets,
    unflatten,
)

OFFSET_LOG_VERSIONS = (1, 2)
VOID_OFFSET = "-"
# Spark's rule for source names (OffsetSeqV2.validateSourceName); unnamed sources get their
# position ("0"). Checking it tells a v1 line ('{"t":...}', which has colons) from a v2 one.
_SOURCE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class SourceOffset:
    """One source's offset in one batch."""

    # As ``checkpoint show --json`` lists it.
    json_shape = Shape(Fields(Field("is_kafka", key="kafka")))

    source_id: str  # v1: the source's position ("0", "1", ...); v2: the id in the file
    offsets: str | None  # canonical JSON for Kafka, the raw text otherwise; None for "-"
    is_kafka: bool

    def kafka_offsets(self) -> dict[str, dict[int, int]] | None:
        """The parsed Kafka offsets, or None for another kind of source or no offset."""
        if not self.is_kafka or self.offsets is None:
            return None
        return parse_offsets(self.offsets)


@dataclass(frozen=True, slots=True)
class OffsetLogEntry:
    """``offsets/N``: the plan of batch N."""

    batch_id: int
    log_version: int
    batch_watermark_ms: int  # the watermark batch N runs with: W when N is the last committed
    batch_timestamp_ms: int
    conf: Mapping[str, str]
    sources: tuple[SourceOffset, ...]

    @property
    def kafka_offsets(self) -> str | None:
        """The Kafka end offsets of every Kafka source together, canonical; None if none.

        The pipeline has one Kafka source; a query with several reads disjoint topics, so
        their union is still one offsets value, the form the ledger records.
        """
        merged: dict[PartitionKey, int] = {}
        found = False
        for source in self.sources:
            offsets = source.kafka_offsets()
            if offsets is not None:
                found = True
                merged.update(flatten(offsets))
        return format_offsets(unflatten(merged)) if found else None


def parse_offset_log(content: bytes, *, batch_id: int, where: str) -> OffsetLogEntry:
    """Parse the content of ``offsets/<batch_id>``; ``where`` names the file in errors."""
    lines = split_lines(content, where)
    version = parse_version(lines, where, known=OFFSET_LOG_VERSIONS)
    if len(lines) < 2:
        raise CorruptCheckpointError(
            f"{where} ends after its version line; expected the batch metadata JSON on line 2"
        )
    metadata_line = lines[1].strip()
    if metadata_line:
        metadata = parse_json_object(metadata_line, where, 2)
    elif version == 1:
        metadata = {}
    else:
        raise CorruptCheckpointError(f"{where} has an empty line 2; v2 requires batch metadata")
    sources = tuple(
        _parse_source_line(line, version, index, where, line_number=index + 3)
        for index, line in enumerate(lines[2:])
    )
    seen = [source.source_id for source in sources]
    duplicates = sorted({source_id for source_id in seen if seen.count(source_id) > 1})
    if duplicates:
        raise CorruptCheckpointError(f"{where} names source {duplicates[0]!r} more than once")
    return OffsetLogEntry(
        batch_id=batch_id,
        log_version=version,
        batch_watermark_ms=integer_field(metadata, "batchWatermarkMs", where, default=0),
        batch_timestamp_ms=integer_field(metadata, "batchTimestampMs", where, default=0),
        conf=_conf(metadata, where),
        sources=sources,
    )


def _parse_source_line(
    line: str, version: int, index: int, where: str, *, line_number: int
) -> SourceOffset:
    if version == 1:
        source_id, text = str(index), line
    else:
        source_id, colon, text = line.partition(":")
        if not colon or not _SOURCE_ID.fullmatch(source_id):
            raise CorruptCheckpointError(
                f"{where} line {line_number} is {line[:80]!r}; expected <source id>:<offset>, "
                "the id made of letters, digits, '_' and '-'"
            )
    if text == VOID_OFFSET:
        return SourceOffset(source_id, None, is_kafka=False)
    # Every Spark offset serialises to JSON, so text that does not parse is a cut-off or
    # damaged line, not some other source's format.
    value = json_value(
        text,
        lambda error: CorruptCheckpointError(
            f"{where} line {line_number}: the offset of source {source_id} is not valid JSON "
            f"({error.msg} at character {error.pos}): {text[:80]!r}"
        ),
    )
    try:
        kafka = offsets_from_json_object(value)
    except InvalidOffsetsError:
        return SourceOffset(source_id, text, is_kafka=False)
    return SourceOffset(source_id, format_offsets(kafka), is_kafka=True)


def _conf(metadata: Mapping[str, object], where: str) -> dict[str, str]:
    conf = metadata.get("conf", {})
    if not isinstance(conf, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in conf.items()
    ):
        raise CorruptCheckpointError(f"{where}: 'conf' must map names to strings, got {conf!r}")
    return dict(conf)
