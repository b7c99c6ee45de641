"""``commits/N``: batch N is done. Written after it completes, never before.

::

    v1
    {"nextBatchWatermarkMs":36000}

Version 2 (Spark's checkpoint format v2 for state stores) adds ``stateUniqueIds``; the
watermark is the same field. A missing metadata line means 0, as in Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark_kafka_upgrade._core.formats.log_files import (
    integer_field,
    parse_json_object,
    parse_version,
    split_lines,
)

COMMIT_LOG_VERSIONS = (1, 2)


@dataclass(frozen=True, slots=True)
class CommitEntry:
    """``commits/N``: batch N committed."""

    batch_id: int
    log_version: int
    # Max event time seen through batch N minus the delay; batch N + 1 runs with it. It is
    # not W: windows due under it may not have been written yet.
    next_batch_watermark_ms: int


def parse_commit_log(content: bytes, *, batch_id: int, where: str) -> CommitEntry:
    """Parse the content of ``commits/<batch_id>``; ``where`` names the file in errors."""
    lines = split_lines(content, where)
    version = parse_version(lines, where, known=COMMIT_LOG_VERSIONS)
    metadata = parse_json_object(lines[1], where, 2) if len(lines) > 1 else {}
    return CommitEntry(
        batch_id=batch_id,
        log_version=version,
        next_batch_watermark_ms=integer_field(metadata, "nextBatchWatermarkMs", where, default=0),
    )
