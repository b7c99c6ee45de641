"""Whether a generation's committed files are still what its sink log committed, through
``storage`` (no JVM).

The sink log names each committed file with its size. A committed file that is gone, or has
another size, is no longer what the pipeline wrote, and Spark fails on it with a page of
Java (``FAILED_READ_FILE.FILE_NOT_EXIST``, ``CANNOT_READ_FILE_FOOTER``). One listing of
each directory the files live in answers both for every file at once, where a look at each
file would cost a request each on an object store. What only reading the bytes can show
(Hadoop's checksum, a damaged footer) is Spark's to find: the file sink
(``FileSink.damage_in``) turns its error into the same record.

Gather (:func:`check_generation`: the log, the listings), then decide (:func:`damaged_files`,
pure: the log against the listings).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from pyspark_kafka_upgrade._adapters.sink.log import SINK_LOG_DIR, read_sink_log
from pyspark_kafka_upgrade._adapters.storage.filesystem import (
    StorageError,
    location_key,
    open_location,
)
from pyspark_kafka_upgrade._core.formats.sink_log import SinkFileEntry, SinkLog
from pyspark_kafka_upgrade._domain.records.damage import (
    DamagedFile,
    Part,
    missing,
    no_access,
    wrong_size,
)
from pyspark_kafka_upgrade._domain.records.sink_errors import IntegrityError

__all__ = [
    "GenerationCheck",
    "Listing",
    "check_generation",
    "damaged_files",
    "read_generation_log",
]


@dataclass(frozen=True, slots=True)
class Listing:
    """What storage says is in one directory the committed files live in."""

    directory: str  # as the sink log's paths name it, without a trailing slash
    sizes: Mapping[str, int] | None  # file name -> bytes; None: permission was denied


@dataclass(frozen=True, slots=True)
class GenerationCheck:
    """One generation's sink log, and which of its committed files are damaged."""

    generation: int
    directory: str  # the generation's output directory
    log: SinkLog | None  # None: the log itself cannot be read (``damaged`` says why)
    damaged: tuple[DamagedFile, ...]

    @property
    def healthy(self) -> tuple[SinkFileEntry, ...]:
        """The committed files nothing is known to be wrong with, in log order."""
        if self.log is None:
            return ()
        bad = {location_key(file.path) for file in self.damaged}
        return tuple(entry for entry in self.log.files if location_key(entry.path) not in bad)


def read_generation_log(generation: int, directory: str) -> SinkLog:
    """Generation ``generation``'s sink log; IntegrityError, in one line, when this user may
    not read it (CorruptCheckpointError when it is not a sink log)."""
    try:
        return read_sink_log(directory)
    except StorageError as error:
        raise IntegrityError([_unreadable_log(generation, directory, error)]) from None


def check_generation(
    generation: int, directory: str, *, log: SinkLog | None = None
) -> GenerationCheck:
    """Read generation ``generation``'s sink log (unless given) and list the directories of
    its committed files: which of them are damaged. A log this user may not read is one
    damaged record, not an error: the other generations can still be read. Other failures of
    the storage are StorageError: they say nothing about the files."""
    if log is None:
        try:
            log = read_sink_log(directory)
        except StorageError as error:
            return GenerationCheck(
                generation, directory, None, (_unreadable_log(generation, directory, error),)
            )
    places = sorted({_home(_parent(entry.path), directory) for entry in log.files})
    listings = [_list(place) for place in places]
    return GenerationCheck(
        generation, directory, log, damaged_files(generation, log.files, listings, directory)
    )


def damaged_files(
    generation: int,
    committed: Iterable[SinkFileEntry],
    listings: Iterable[Listing],
    directory: str | None = None,
) -> tuple[DamagedFile, ...]:
    """The committed files that are missing or of another size than the log committed, and
    each directory this user may not list (or that ``listings`` lacks). In log order.

    ``directory`` is the generation's output directory as the settings name it: a committed
    file the log names in a directory of that name is looked for there (see ``_home``)."""
    by_directory = {location_key(listing.directory): listing for listing in listings}
    found: list[DamagedFile] = []
    reported: set[str] = set()
    for entry in committed:
        parent = _parent(entry.path)
        home = parent if directory is None else _home(parent, directory)
        listing = by_directory.get(location_key(home))
        if listing is None or listing.sizes is None:
            # Nothing is known of its files but that they cannot be read: the directory is
            # named once, not each file in it.
            if parent not in reported:
                reported.add(parent)
                found.append(no_access(generation, Part.OUTPUT_DIRECTORY, parent))
            continue
        size = listing.sizes.get(unquote(posixpath.basename(entry.path)))
        if size is None:
            found.append(missing(generation, entry.path))
        elif size != entry.size:
            found.append(wrong_size(generation, entry.path, committed=entry.size, found=size))
    return tuple(found)


def _list(directory: str) -> Listing:
    try:
        return Listing(directory, open_location(directory).file_sizes())
    except StorageError as error:
        if not error.denied:
            raise  # the storage failed, which says nothing about the files: one line as it is
        return Listing(directory, None)


def _unreadable_log(generation: int, directory: str, error: StorageError) -> DamagedFile:
    if not error.denied:
        raise error
    return no_access(
        generation, Part.SINK_LOG, error.uri or posixpath.join(directory, SINK_LOG_DIR)
    )


def _home(parent: str, directory: str) -> str:
    """Where to list a committed file the log names in ``parent``: the generation's own
    ``directory`` when ``parent`` is it under another spelling. Spark writes the log with
    the path qualified its own way (Databricks: ``dbfs:/Volumes/...`` for ``/Volumes/...``),
    which this process may not open; the file sink writes every file of a generation into
    its directory, so the directory's own name identifies it."""
    if location_key(parent) == location_key(directory):
        return directory
    if posixpath.basename(parent.rstrip("/")) == posixpath.basename(directory.rstrip("/")):
        return directory
    return parent


def _parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]
