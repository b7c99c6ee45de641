"""The query's initial offsets, resolved once and kept next to its checkpoint.

Spark asks a Python source for its initial offset again when the driver died after writing
``offsets/0`` but before ``commits/0``. Resolving ``latest`` a second time would skip every
record between the two answers, so the first answer is written to a file and reused, as
the built-in source does with ``sources/0/0``. The file has the built-in's exact format (a
zero byte, ``v1``, a newline, the offsets JSON), so the job can place it at the same path.

These methods run in a Python worker without access to the JVM, so the file is reached
through pyarrow's filesystems: local paths and ``file:``, ``s3://`` (and Hadoop's
``s3a://``), ``gs://``, ``hdfs://``.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import InitialOffsetsError
from pyspark_kafka_upgrade._adapters.storage.filesystem import StorageError, open_location
from pyspark_kafka_upgrade._domain.values.offsets import (
    InvalidOffsetsError,
    Offsets,
    format_offsets,
    parse_offsets,
)

_HEADER = b"\x00v1\n"
_VERSION_LINE = b"v1"


def load_or_resolve(location: str, resolve: Callable[[], Offsets]) -> Offsets:
    """The offsets stored at ``location``; if there are none, ``resolve()`` them and store them."""
    stored = load_initial_offsets(location)
    if stored is not None:
        return stored
    offsets = resolve()
    save_initial_offsets(location, offsets)
    return offsets


def load_initial_offsets(location: str) -> Offsets | None:
    """The offsets stored at ``location``, or None when no file is there."""
    try:
        file = open_location(location)
        if not file.exists():
            return None
        content = file.read_bytes()
    except StorageError as error:
        raise InitialOffsetsError(f"cannot read the initial offsets: {error}") from None
    return _decode(location, content)


def save_initial_offsets(location: str, offsets: Offsets) -> None:
    """Write ``offsets`` to ``location`` so that a reader sees the whole file or none."""
    content = _HEADER + format_offsets(offsets).encode("utf-8")
    try:
        open_location(location).write_atomically(content)
    except StorageError as error:
        raise InitialOffsetsError(f"cannot write the initial offsets: {error}") from None


def _decode(location: str, content: bytes) -> Offsets:
    # The built-in source's reader also accepts files without the leading zero byte.
    body = content.removeprefix(b"\x00")
    version, _, text = body.partition(b"\n")
    if version.strip() != _VERSION_LINE:
        raise InitialOffsetsError(
            f"the initial offsets at {location} start with {version[:20]!r}, not 'v1': the file "
            "was written by something else or by a newer version"
        )
    try:
        return parse_offsets(text.decode("utf-8"), what=f"the initial offsets at {location}")
    except (UnicodeDecodeError, InvalidOffsetsError) as error:
        raise InitialOffsetsError(str(error)) from None
