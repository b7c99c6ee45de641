"""An offset store of small JSON files on any Hadoop-compatible filesystem.

It goes through Spark's own JVM filesystem classes, so it works wherever the checkpoint lives
(file:, hdfs:, s3a:, abfs:, ...) with the credentials Spark already has. Layout::

    <root>/_schema.json
    <root>/batches/<pipeline>/gen=<n>/<batch id, 20 digits>.json
    <root>/generations/<pipeline>/gen=<n>.json
    <root>/gaps/<pipeline>/gen=<n>/<recorded_at_ms, 20 digits>-<uuid>.json

One record per file, one JSON line each, written atomically: an upsert replaces a whole file
and a reader never sees half of one. Reads take only file names of the layout's exact shape,
so temporary files (Spark's ``.<name>.<uuid>.tmp``, Hadoop's ``._COPYING_``) are never read.
"""

from __future__ import annotations

import re
import threading
import uuid
from contextlib import AbstractContextManager
from typing import Any

from py4j.protocol import Py4JError, Py4JJavaError  # type: ignore[import-untyped]
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._adapters.ledger.store_errors import (
    refuse_newer_schema,
    translated_errors,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
    dump_json,
    load_json_object,
)
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    GenerationNotFoundError,
    LedgerSchemaError,
    OffsetStoreError,
)
from pyspark_kafka_upgrade._domain.records.store import LEDGER_SCHEMA_VERSION, OffsetStore
from pyspark_kafka_upgrade._domain.values.redaction import redact_text

# Spark 4.1 moved the class into a subpackage; the first one the JVM can load is used.
CHECKPOINT_FILE_MANAGER_CLASSES = (
    "org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.CheckpointFileManager",
)

# Names become directories, so they must be one path segment that Hadoop does not hide.
_PIPELINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_GENERATION_DIR = re.compile(r"gen=(\d+)")
_BATCH_FILE = re.compile(r"(\d{20})\.json")
_GENERATION_FILE = re.compile(r"gen=(\d+)\.json")
_GAP_FILE = re.compile(r"\d{20}-[0-9a-f]{32}\.json")


class FilesystemOffsetStore(OffsetStore):
    """The ledger as JSON files under one root URI, written through Spark's JVM.

    Concurrent writers to different keys never touch the same file. Writers to the same key
    race to an atomic replace, so the last one wins, which is what a repeated progress event
    needs. Status changes read, modify and write one file; they are serialised within this
    process only, so one process at a time should manage a pipeline's generations.
    """

    def __init__(self, spark: SparkSession, root_uri: str) -> None:
        self._closed = False
        self._status_lock = threading.Lock()
        self._root = root_uri
        with self._translated_errors("opening the ledger"):
            self._files = _HadoopFiles(spark, root_uri)
            self._root = self._files.root_uri
            self._check_schema()

    def _check_schema(self) -> None:
        uri = f"{self._root}/_schema.json"
        schema = dump_json({"version": LEDGER_SCHEMA_VERSION})
        if not self._files.exists(uri) and self._files.create_once(uri, schema):
            return
        version = self._stored_schema_version(uri)
        refuse_newer_schema(self._described_store(), version)
        if version < 1:
            raise LedgerSchemaError(
                f"the {self._described_store()} has an unrecognised schema version {version}"
            )

    def _stored_schema_version(self, uri: str) -> int:
        version = self._read_object(uri).get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise LedgerSchemaError(f"{redact_text(uri)} has no integer 'version'")
        return version

    def _described_root(self) -> str:
        return redact_text(self._root)

    def _described_store(self) -> str:
        # Not kept: opening the files qualifies the root.
        return f"offset store at {self._described_root()}"

    def _translated_errors(self, action: str) -> AbstractContextManager[None]:
        return translated_errors(
            self._described_store(),
            action,
            closed=self._closed,
            unavailable=(Py4JError, PySparkException),
            reason=_java_reason,
        )

    def _pipeline_dir(self, kind: str, pipeline: str) -> str:
        if not _PIPELINE_NAME.fullmatch(pipeline):
            raise ValueError(
                f"pipeline name {pipeline!r} cannot be a directory of the offset store: use "
                "letters, digits, '.', '_' and '-', starting with a letter or digit"
            )
        return f"{self._root}/{kind}/{pipeline}"

    def _batch_dir(self, pipeline: str, generation: int) -> str:
        return f"{self._pipeline_dir('batches', pipeline)}/gen={generation}"

    def _batch_uri(self, record: BatchRecord) -> str:
        if record.batch_id < 0:
            raise ValueError(f"batch id {record.batch_id} is negative")
        directory = self._batch_dir(record.pipeline, record.generation)
        return f"{directory}/{record.batch_id:020d}.json"

    def _generation_uri(self, pipeline: str, generation: int) -> str:
        return f"{self._pipeline_dir('generations', pipeline)}/gen={generation}.json"

    def _read_object(self, uri: str) -> dict[str, object]:
        return load_json_object(self._files.read_text(uri), f"ledger file {redact_text(uri)}")

    def record_batch(self, record: BatchRecord) -> None:
        with self._translated_errors("recording a batch"):
            self._files.write_atomic(self._batch_uri(record), dump_json(record.to_json()))

    def batches(self, pipeline: str, generation: int) -> list[BatchRecord]:
        directory = self._batch_dir(pipeline, generation)
        with self._translated_errors("reading batches"):
            names = sorted(_matching_files(self._files.list(directory), _BATCH_FILE))
            return [BatchRecord.from_json(self._read_object(f"{directory}/{n}")) for n in names]

    def last_batch(self, pipeline: str, generation: int) -> BatchRecord | None:
        directory = self._batch_dir(pipeline, generation)
        with self._translated_errors("reading the last batch"):
            names = _matching_files(self._files.list(directory), _BATCH_FILE)
            if not names:
                return None
            # Zero-padded ids: the greatest name is the greatest batch id.
            return BatchRecord.from_json(self._read_object(f"{directory}/{max(names)}"))

    def record_generation(self, record: GenerationRecord) -> None:
        uri = self._generation_uri(record.pipeline, record.generation)
        with self._translated_errors("recording a generation"):
            self._files.write_atomic(uri, dump_json(record.to_json()))

    def generations(self, pipeline: str) -> list[GenerationRecord]:
        directory = self._pipeline_dir("generations", pipeline)
        with self._translated_errors("reading generations"):
            names = _matching_files(self._files.list(directory), _GENERATION_FILE)
            records = [
                GenerationRecord.from_json(self._read_object(f"{directory}/{name}"))
                for name in names
            ]
        return sorted(records, key=lambda record: record.generation)

    def generation(self, pipeline: str, generation: int) -> GenerationRecord | None:
        uri = self._generation_uri(pipeline, generation)
        with self._translated_errors("reading a generation"):
            if not self._files.exists(uri):
                return None
            return GenerationRecord.from_json(self._read_object(uri))

    def set_generation_status(
        self, pipeline: str, generation: int, status: GenerationStatus, *, at_ms: int
    ) -> None:
        uri = self._generation_uri(pipeline, generation)
        with self._status_lock, self._translated_errors("changing a generation's status"):
            if not self._files.exists(uri):
                raise GenerationNotFoundError(pipeline, generation)
            data = self._read_object(uri)
            data["status"] = GenerationStatus(status).value
            data["updated_at_ms"] = at_ms
            # Round-trip through the record so a malformed file is not rewritten as valid.
            updated = GenerationRecord.from_json(data)
            self._files.write_atomic(uri, dump_json(updated.to_json()))

    def record_gap(self, gap: LedgerGap) -> None:
        directory = f"{self._pipeline_dir('gaps', gap.pipeline)}/gen={gap.generation}"
        # Gaps are appended, never merged: a unique name per marker.
        name = f"{gap.recorded_at_ms:020d}-{uuid.uuid4().hex}.json"
        with self._translated_errors("recording a gap"):
            self._files.write_atomic(f"{directory}/{name}", dump_json(gap.to_json()))

    def gaps(self, pipeline: str, generation: int | None = None) -> list[LedgerGap]:
        pipeline_dir = self._pipeline_dir("gaps", pipeline)
        with self._translated_errors("reading gaps"):
            directories = (
                [f"{pipeline_dir}/gen={generation}"]
                if generation is not None
                else [f"{pipeline_dir}/{name}" for name in self._generation_dirs(pipeline_dir)]
            )
            keyed = [
                (name, LedgerGap.from_json(self._read_object(f"{directory}/{name}")))
                for directory in directories
                for name in _matching_files(self._files.list(directory), _GAP_FILE)
            ]
        keyed.sort(key=lambda item: (item[1].recorded_at_ms, item[0]))
        return [gap for _, gap in keyed]

    def _generation_dirs(self, pipeline_dir: str) -> list[str]:
        return [
            name
            for name, is_dir in self._files.list(pipeline_dir)
            if is_dir and _GENERATION_DIR.fullmatch(name)
        ]

    def pipelines(self) -> list[str]:
        names: set[str] = set()
        with self._translated_errors("listing pipelines"):
            for kind in ("batches", "generations", "gaps"):
                names.update(
                    name
                    for name, is_dir in self._files.list(f"{self._root}/{kind}")
                    if is_dir and _PIPELINE_NAME.fullmatch(name)
                )
        return sorted(names)

    def schema_version(self) -> int:
        with self._translated_errors("reading the schema version"):
            return self._stored_schema_version(f"{self._root}/_schema.json")

    def describe(self) -> str:
        return f"JSON files under {self._described_root()} (Hadoop filesystem via Spark)"

    def close(self) -> None:
        # The SparkSession belongs to the caller, so there is nothing to release.
        self._closed = True


def _matching_files(entries: list[tuple[str, bool]], pattern: re.Pattern[str]) -> list[str]:
    return [name for name, is_dir in entries if not is_dir and pattern.fullmatch(name)]


def _java_reason(exc: Exception) -> str:
    """The Java exception's own one-line message, without py4j's stack trace."""
    java_exception: Any = getattr(exc, "java_exception", None)
    text = str(exc) if java_exception is None else str(java_exception.toString())
    lines = text.strip().splitlines()
    return redact_text(lines[0] if lines else type(exc).__name__)


class _HadoopFiles:
    """Spark's JVM filesystem API, kept here so py4j's untyped objects go no further."""

    def __init__(self, spark: SparkSession, root_uri: str) -> None:
        jvm: Any = getattr(spark, "_jvm", None)
        jsc: Any = getattr(spark, "_jsc", None)
        if jvm is None or jsc is None:
            raise OffsetStoreError(
                "the filesystem offset store needs a classic SparkSession with a JVM; "
                "Spark Connect sessions cannot reach the Hadoop filesystem API"
            )
        # Resolved once: every attribute step through py4j's package tree is a JVM round trip.
        self._path_class: Any = jvm.org.apache.hadoop.fs.Path
        self._io_utils: Any = jvm.org.apache.commons.io.IOUtils
        configuration = jsc.hadoopConfiguration()
        root = self._path_class(root_uri)
        qualified = root.getFileSystem(configuration).makeQualified(root)
        # Without a trailing slash, so "<root>/<child>" never doubles one (s3a://bucket/).
        self.root_uri = str(qualified.toString()).rstrip("/")
        self._manager = _checkpoint_file_manager_class(jvm).create(qualified, configuration)

    def _path(self, uri: str) -> Any:
        return self._path_class(uri)

    def exists(self, uri: str) -> bool:
        return bool(self._manager.exists(self._path(uri)))

    def list(self, directory: str) -> list[tuple[str, bool]]:
        """(name, is directory) of each entry; empty when the directory does not exist."""
        path = self._path(directory)
        if not self._manager.exists(path):
            return []
        return [
            (str(status.getPath().getName()), bool(status.isDirectory()))
            for status in self._manager.list(path)
        ]

    def read_text(self, uri: str) -> str:
        stream = self._manager.open(self._path(uri))
        try:
            data: bytes = self._io_utils.toByteArray(stream)
        finally:
            stream.close()
        return data.decode("utf-8")

    def write_atomic(self, uri: str, text: str, *, overwrite: bool = True) -> None:
        """Write a whole file that readers see either entirely or not at all.

        Spark's checkpoint writer creates a hidden temporary file and renames it over the
        target when closed (the same mechanism as the checkpoint's own offsets and commits).
        """
        path = self._path(uri)
        self._manager.mkdirs(path.getParent())
        stream = self._manager.createAtomic(path, overwrite)
        try:
            stream.write((text + "\n").encode("utf-8"))
        except BaseException:
            stream.cancel()
            raise
        stream.close()

    def create_once(self, uri: str, text: str) -> bool:
        """Write a file that does not exist yet, atomically; False, the file left as it was,
        when another writer created it first.

        Not a replace: Hadoop's rename over an existing local file deletes the target first,
        and a reader in between finds no file at all (a concurrent first open of a ledger did).
        The loser's hidden temporary file stays behind, as Spark's writer leaves it.
        """
        try:
            self.write_atomic(uri, text, overwrite=False)
        except Py4JJavaError as error:
            if _java_class(error) == "org.apache.hadoop.fs.FileAlreadyExistsException":
                return False
            raise
        return True


def _java_class(exc: Exception) -> str | None:
    java_exception: Any = getattr(exc, "java_exception", None)
    return None if java_exception is None else str(java_exception.getClass().getName())


def _checkpoint_file_manager_class(jvm: Any) -> Any:
    utils = jvm.org.apache.spark.util.Utils
    for name in CHECKPOINT_FILE_MANAGER_CLASSES:
        if utils.classIsLoadable(name):
            found: Any = jvm
            for part in name.split("."):
                found = getattr(found, part)
            return found
    raise OffsetStoreError(
        "this Spark has no CheckpointFileManager (looked for "
        + ", ".join(CHECKPOINT_FILE_MANAGER_CLASSES)
        + "); the filesystem offset store cannot write atomically"
    )
