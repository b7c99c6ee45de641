"""What every Spark metadata log file shares: its name, its version line and JSON lines.

Spark writes one file per batch, named by the batch id (``offsets/7``, ``commits/7``,
``_spark_metadata/7`` or ``_spark_metadata/9.compact``), first to a hidden temporary file
(``.7.<uuid>.tmp``) that it then renames, next to Hadoop's checksum files (``.7.crc``). Only
names of the exact batch shape are log entries; everything else is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from pyspark_kafka_upgrade._core.formats.format_errors import (
    CorruptCheckpointError,
    UnsupportedLogVersionError,
)
from pyspark_kafka_upgrade._domain.values.json_text import json_object

COMPACT_SUFFIX = ".compact"
# No leading zeros: "07" would otherwise be read as batch 7 next to a real "7".
_BATCH_NAME = re.compile(r"0|[1-9][0-9]*")
_VERSION_LINE = re.compile(r"v([0-9]+)")


def batch_id_of(name: str) -> int | None:
    """The batch id a file name such as ``7`` stands for; None for any other name."""
    return int(name) if _BATCH_NAME.fullmatch(name) else None


def sink_batch_of(name: str) -> tuple[int, bool] | None:
    """``(batch id, is compacted)`` for ``7`` or ``9.compact``; None for any other name."""
    compact = name.endswith(COMPACT_SUFFIX)
    batch_id = batch_id_of(name.removesuffix(COMPACT_SUFFIX) if compact else name)
    return None if batch_id is None else (batch_id, compact)


def split_lines(content: bytes, where: str) -> list[str]:
    """The file's lines, read the way Spark's ``getLines`` reads them.

    Only ``\\n`` (optionally preceded by ``\\r``) ends a line: ``str.splitlines`` would also
    split at characters such as U+2028, which Spark's JSON may hold unescaped.
    """
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorruptCheckpointError(
            f"{where} is not UTF-8 text (byte {error.start} is {content[error.start]:#04x})"
        ) from None
    if not text:
        return []
    return [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]


def parse_version(lines: list[str], where: str, *, known: Collection[int]) -> int:
    """The format version on the first line (``v1``), which must be one of ``known``."""
    if not lines:
        raise CorruptCheckpointError(f"{where} is empty; expected a version line such as v1")
    match = _VERSION_LINE.fullmatch(lines[0].strip())
    if match is None or int(match.group(1)) == 0:
        raise CorruptCheckpointError(
            f"{where} starts with {_shorten(lines[0])!r}; expected a version line such as v1"
        )
    version = int(match.group(1))
    if version not in known:
        readable = " and ".join(f"v{number}" for number in sorted(known))
        raise UnsupportedLogVersionError(
            f"{where} is in log format v{version}, but this package reads only {readable}; "
            "it was probably written by a newer Spark, so upgrade the pipeline package"
        )
    return version


def parse_json_object(line: str, where: str, line_number: int) -> dict[str, object]:
    """One line holding a JSON object; anything else (e.g. a cut-off line) is corruption."""
    return json_object(
        line,
        lambda error: CorruptCheckpointError(
            f"{where} line {line_number} is not valid JSON ({error.msg} at character "
            f"{error.pos}): {_shorten(line)!r}"
        ),
        lambda: CorruptCheckpointError(
            f"{where} line {line_number} must be a JSON object, got {_shorten(line)!r}"
        ),
    )


def integer_field(
    data: Mapping[str, object], key: str, where: str, *, default: int | None = None
) -> int:
    """An integer field; ``default`` stands in when it is absent, as json4s does for Spark."""
    if key not in data:
        if default is None:
            raise CorruptCheckpointError(f"{where} has no {key!r}")
        return default
    value = data[key]
    # bool is an int subclass, but true is never a watermark or a size.
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptCheckpointError(f"{where}: {key!r} must be an integer, got {value!r}")
    return value


def _shorten(text: str, limit: int = 80) -> str:
    # A corrupt file may hold megabytes on one line; the message needs only its start.
    return text if len(text) <= limit else text[:limit] + "..."
