"""Files on the pipeline's filesystem, whatever it is: local paths, ``file:``, HDFS, S3, GCS.

The checkpoint inspector, the single-writer guard and the Python source's initial offsets
run where no JVM may be available (the CLI, a Python worker), so they reach files through
pyarrow's filesystems rather than Spark's Hadoop API. Hadoop's ``s3a://`` and ``s3n://``
URIs name the same objects as ``s3://``.
"""

from __future__ import annotations

import posixpath
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow.fs

from pyspark_kafka_upgrade._domain.errors import PipelineError

_HADOOP_SCHEMES = {"s3a://": "s3://", "s3n://": "s3://"}
# Object stores publish an object only when its upload completes, so writing in place is
# already atomic there, and their "rename" is a copy that is not.
_OBJECT_STORES = {"s3", "gcs"}


class StorageError(PipelineError, OSError):
    """A location that cannot be opened, read or written; the message names it.

    ``uri`` is the location that failed and ``denied`` whether the filesystem refused this
    user (permission), so that a caller that knows what the location is can say so.
    """

    uri: str | None = None
    denied: bool = False


def storage_error(doing: str, uri: str, error: OSError) -> StorageError:
    """``error`` of pyarrow's, while ``doing`` something to ``uri``, as one line."""
    denied = isinstance(error, PermissionError) or any(
        marker in str(error) for marker in _DENIED_MARKERS
    )
    # pyarrow's text repeats the path and the errno twice; "permission denied" says it all.
    failure = StorageError(f"cannot {doing} {uri}: {'permission denied' if denied else error}")
    failure.uri = uri
    failure.denied = denied
    return failure


# How object stores' clients word a refusal (S3: AccessDenied, GCS: 403 Forbidden).
_DENIED_MARKERS = ("Permission denied", "ACCESS_DENIED", "AccessDenied", "Forbidden")


@dataclass(frozen=True)
class Location:
    """A filesystem and a path on it, with the URI the user gave for messages."""

    filesystem: Any  # pyarrow.fs.FileSystem; pyarrow ships no type information
    path: str
    uri: str

    def child(self, *names: str) -> Location:
        return Location(
            self.filesystem,
            posixpath.join(self.path, *names),
            join_uri(self.uri, *names),
        )

    def exists(self) -> bool:
        return bool(self.info().type != pyarrow.fs.FileType.NotFound)

    def is_dir(self) -> bool:
        return bool(self.info().type == pyarrow.fs.FileType.Directory)

    def info(self) -> Any:
        try:
            return self.filesystem.get_file_info(self.path)
        except OSError as error:
            raise storage_error("look at", self.uri, error) from None

    def list_names(self) -> list[str]:
        """The names directly inside this directory, sorted; empty when it does not exist."""
        return sorted(posixpath.basename(info.path) for info in self._listing())

    def file_sizes(self) -> dict[str, int]:
        """The files directly inside this directory, by name, with their sizes in bytes; one
        listing, where a look at each file would be a request each on an object store.
        Empty when the directory does not exist."""
        return {
            posixpath.basename(info.path): int(info.size)
            for info in self._listing()
            if info.type == pyarrow.fs.FileType.File
        }

    def _listing(self) -> list[Any]:
        selector = pyarrow.fs.FileSelector(self.path, allow_not_found=True, recursive=False)
        try:
            infos: list[Any] = self.filesystem.get_file_info(selector)
        except OSError as error:
            raise storage_error("list", self.uri, error) from None
        return infos

    def read_bytes(self) -> bytes:
        try:
            with self.filesystem.open_input_stream(self.path) as stream:
                content: bytes = stream.read()
        except OSError as error:
            raise storage_error("read", self.uri, error) from None
        return content

    def write_atomically(self, content: bytes) -> None:
        """Write so that a reader sees the whole new content or the old one, never a part."""
        try:
            self.filesystem.create_dir(posixpath.dirname(self.path), recursive=True)
            if self.filesystem.type_name in _OBJECT_STORES:
                self._write(self.path, content)
                return
            directory, name = posixpath.split(self.path)
            temporary = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
            self._write(temporary, content)
            self.filesystem.move(temporary, self.path)
        except OSError as error:
            raise storage_error("write", self.uri, error) from None

    def delete_file(self) -> None:
        """Delete this file; a file that is already gone is not an error."""
        try:
            self.filesystem.delete_file(self.path)
        except FileNotFoundError:
            pass
        except OSError as error:
            raise storage_error("delete", self.uri, error) from None

    def _write(self, path: str, content: bytes) -> None:
        with self.filesystem.open_output_stream(path) as stream:
            stream.write(content)


def open_location(uri: str) -> Location:
    """The filesystem behind ``uri`` (a path or a URI) and the path on it."""
    translated = uri
    for hadoop_scheme, scheme in _HADOOP_SCHEMES.items():
        if translated.startswith(hadoop_scheme):
            translated = scheme + translated.removeprefix(hadoop_scheme)
    try:
        filesystem, path = pyarrow.fs.FileSystem.from_uri(translated)
    except (ValueError, OSError, ImportError):
        # A relative local path is not a URI; pyarrow wants it absolute.
        if "://" in translated:
            raise StorageError(f"cannot open the filesystem of {uri}") from None
        filesystem = pyarrow.fs.LocalFileSystem()
        path = posixpath.abspath(translated)
    return Location(filesystem, str(path), uri)


def absolute_uri(uri: str) -> str:
    """``uri`` unchanged when it has a scheme, else as an absolute local path.

    Spark's Python workers and executors may run in another working directory, so a path
    handed to them must not depend on the driver's.
    """
    if "://" in uri or uri.startswith("file:"):
        return uri
    return posixpath.abspath(uri)


def location_key(uri: str) -> str:
    """One spelling of a location, to compare two names of it.

    Spark names a file ``file:/x/part-0.parquet`` in its errors, the sink log
    ``file:///x/part-0.parquet`` with percent-escapes, a user ``/x/part-0.parquet``; Hadoop's
    ``s3a://`` is pyarrow's ``s3://``.
    """
    text = unquote(uri)
    if text.startswith("file:"):
        text = "/" + text.removeprefix("file:").lstrip("/")
    for hadoop_scheme, scheme in _HADOOP_SCHEMES.items():
        if text.startswith(hadoop_scheme):
            text = scheme + text.removeprefix(hadoop_scheme)
    return text.rstrip("/") or "/"


def join_uri(base: str, *names: str) -> str:
    """``base`` with ``names`` appended, keeping its scheme: ``s3a://b/x`` + ``y`` is ``s3a://b/x/y``."""
    return posixpath.join(base.rstrip("/") or "/", *names) if names else base
