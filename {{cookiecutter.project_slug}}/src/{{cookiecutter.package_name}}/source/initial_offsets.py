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

import posixpath
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow.fs

from ..offsets import InvalidOffsetsError, Offsets, format_offsets, parse_offsets
from .errors import InitialOffsetsError

_HEADER = b"\x00v1\n"
_VERSION_LINE = b"v1"
# Object stores publish an object only when its upload completes, so writing in place is
# already atomic there, and their "rename" is a copy that is not.
_OBJECT_STORES = {"s3", "gcs"}
_HADOOP_SCHEMES = {"s3a://": "s3://", "s3n://": "s3://"}


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
    filesystem, path = _filesystem(location)
    try:
        if filesystem.get_file_info(path).type == pyarrow.fs.FileType.NotFound:
            return None
        with filesystem.open_input_stream(path) as stream:
            content: bytes = stream.read()
    except OSError as error:
        raise InitialOffsetsError(
            f"cannot read the initial offsets at {location}: {error}"
        ) from None
    return _decode(location, content)


def save_initial_offsets(location: str, offsets: Offsets) -> None:
    """Write ``offsets`` to ``location`` so that a reader sees the whole file or none."""
    filesystem, path = _filesystem(location)
    content = _HEADER + format_offsets(offsets).encode("utf-8")
    try:
        filesystem.create_dir(posixpath.dirname(path), recursive=True)
        if filesystem.type_name in _OBJECT_STORES:
            _write(filesystem, path, content)
            return
        directory, name = posixpath.split(path)
        temporary = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        _write(filesystem, temporary, content)
        filesystem.move(temporary, path)
    except OSError as error:
        raise InitialOffsetsError(
            f"cannot write the initial offsets to {location}: {error}"
        ) from None


def _write(filesystem: Any, path: str, content: bytes) -> None:
    with filesystem.open_output_stream(path) as stream:
        stream.write(content)


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


def _filesystem(location: str) -> tuple[Any, str]:
    uri = location
    for hadoop_scheme, scheme in _HADOOP_SCHEMES.items():
        if uri.startswith(hadoop_scheme):
            uri = scheme + uri.removeprefix(hadoop_scheme)
    try:
        filesystem, path = pyarrow.fs.FileSystem.from_uri(uri)
    except (ValueError, OSError, ImportError) as error:
        raise InitialOffsetsError(
            f"cannot open the filesystem of the initial offsets location {location}: {error}"
        ) from None
    return filesystem, str(path)
