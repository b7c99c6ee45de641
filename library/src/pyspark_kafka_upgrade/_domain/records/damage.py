"""A generation's committed output that is not as its sink log committed it: the typed record.

The sink log (``_spark_metadata``) names each committed file with its size. A file that is
gone, that has another size, whose bytes Spark cannot read (Hadoop's checksum, a parquet
footer), or that this user may not read, is no longer the output the pipeline committed.
A sink finds them through ``storage`` (``Sink.output``) and adds the ones only Spark can
see (``Sink.damage_in``). Every command says each in one line
(:meth:`DamagedFile.message`): which generation, which file or directory, what happened,
what to do.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.values.json_record import Fields, JsonRecord, Shape, Written


class DamageError(PipelineError):
    """A damaged-file document that is not one: the message names the field."""


class Damage(StrEnum):
    """What is wrong with it."""

    MISSING = "missing"  # the sink log names it; the directory does not hold it
    WRONG_SIZE = "wrong size"  # not the size the sink log committed
    UNREADABLE = "unreadable"  # Spark cannot read its bytes: a checksum, a footer
    NO_ACCESS = "no access"  # permission denied


class Part(StrEnum):
    """Which part of a generation's output it is."""

    COMMITTED_FILE = "committed file"
    SINK_LOG = "sink log"  # <output>/_spark_metadata, or one of its files
    OUTPUT_DIRECTORY = "output directory"  # a directory the committed files live in


# Why it happened and what to do, by what happened. Permission is given by people, so it is
# not called damage; everything else was changed after the sink committed it.
_CHANGED = "the output was changed outside the pipeline"
_WHY_AND_WHAT: dict[Damage, str] = {
    Damage.MISSING: f"{_CHANGED}; restore it from a backup",
    Damage.WRONG_SIZE: f"{_CHANGED} after its batch committed; restore it from a backup",
    Damage.UNREADABLE: f"{_CHANGED}, or the storage damaged it; restore it from a backup",
    Damage.NO_ACCESS: (
        "give the user that runs this command read access to it and to the directories above it"
    ),
}


@dataclass(frozen=True, slots=True)
class DamagedFile(JsonRecord):
    """One committed file (or the directory or log that lists them) a command could not use.

    Its document holds the :meth:`message` too, for scripts that show it; it is derived, so
    not read back.
    """

    json_shape = Shape(
        Fields(),
        Written("message", lambda file: file.message()),
        what="damaged file",
        error=DamageError,
    )

    generation: int
    part: Part
    path: str  # a URI or path, as the sink log or the layout names it
    damage: Damage
    # What exactly happened, a clause after the file's name: "is missing", "has 3215 bytes
    # where the sink log committed 3211", "cannot be read by Spark (<error class>: <cause>)".
    detail: str

    @property
    def name(self) -> str:
        """The committed file's name, or the whole path of a directory or log."""
        if self.part is Part.COMMITTED_FILE:
            return unquote(posixpath.basename(self.path.rstrip("/")))
        return self.path

    @property
    def advice(self) -> str:
        """Why it happened and what to do."""
        return _WHY_AND_WHAT[self.damage]

    def message(self, alternative: str | None = None) -> str:
        """The one line: which generation, which file, what happened, what to do.

        ``alternative`` is what else the command can do meanwhile ("run `output show
        --generation 1` to see the rest"); it follows the advice after "or".
        """
        line = f"generation {self.generation}'s {self.part.value} {self.name} {self.detail}"
        line += f": {self.advice}"
        return f"{line}, or {alternative}" if alternative else line


@dataclass(frozen=True, slots=True)
class FileReadFailure:
    """Spark could not read one file: what its error says, in a line (``spark.errors``)."""

    path: str  # as Spark names it: file:/x/part-0.parquet, s3a://bucket/key
    error_class: str  # FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER, PATH_NOT_FOUND, ...
    cause: str  # the deepest cause, without the path: "ChecksumException: Checksum error ..."
    missing: bool  # the file is not there
    denied: bool  # this user may not read it

    def damage(self, generation: int, path: str) -> DamagedFile:
        """As the record of committed file ``path`` (the sink log's name for it)."""
        # Hadoop says "FileNotFoundException: ... (Permission denied)" for a file it may not
        # open: the refusal is the news, not the absence.
        if self.denied:
            return no_access(generation, Part.COMMITTED_FILE, path)
        if self.missing:
            return missing(generation, path)
        return DamagedFile(
            generation,
            Part.COMMITTED_FILE,
            path,
            Damage.UNREADABLE,
            f"cannot be read by Spark ({self.error_class}: {self.cause})",
        )


def missing(generation: int, path: str) -> DamagedFile:
    return DamagedFile(generation, Part.COMMITTED_FILE, path, Damage.MISSING, "is missing")


def wrong_size(generation: int, path: str, *, committed: int, found: int) -> DamagedFile:
    return DamagedFile(
        generation,
        Part.COMMITTED_FILE,
        path,
        Damage.WRONG_SIZE,
        f"has {found} bytes where the sink log committed {committed}",
    )


def no_access(generation: int, part: Part, path: str) -> DamagedFile:
    return DamagedFile(
        generation, part, path, Damage.NO_ACCESS, "cannot be read (permission denied)"
    )


def generations_of(damaged: Iterable[DamagedFile]) -> list[int]:
    """The generations with damage, ascending, each once."""
    return sorted({file.generation for file in damaged})
