"""Where each generation's checkpoints, output and quarantine live under the pipeline root.

    <root>/
      checkpoints/generation-<n>/aggregates/   the windowed query's checkpoint
      checkpoints/generation-<n>/quarantine/   the quarantine query's checkpoint
      checkpoints/generation-<n>/run.lock      the single-writer guard of generation n
      output/generation-<n>/                   windowed aggregates (+ _spark_metadata)
      quarantine/generation-<n>/               malformed records (+ _spark_metadata)
      output/table/, quarantine/table/         the same in one Delta table for every
                                               generation (sink.format = "delta"); the
                                               output's may be elsewhere
                                               (sink.table_location)

Every generation gets directories of its own: a new checkpoint writing into an older
generation's sink directory would be skipped silently by that directory's
``_spark_metadata``. Nothing here is ever reused or deleted. Read each output directory on
its own (the file sink does): a glob over ``output/generation-*``, several paths at
once, or ``recursiveFileLookup`` ignore ``_spark_metadata`` and return files of batches that
never committed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GENERATION_PREFIX = "generation-"
_GENERATION_DIRECTORY = re.compile(rf"{GENERATION_PREFIX}([1-9][0-9]*)")


def _join(base: str, *names: str) -> str:
    # Plain string joins keep any scheme (s3a://, abfss://) exactly as the user wrote it.
    return "/".join([base.rstrip("/"), *names]) if base.rstrip("/") else "/" + "/".join(names)


def generation_directory_name(generation: int) -> str:
    if generation < 1:
        raise ValueError(f"generations are numbered from 1, got {generation}")
    return f"{GENERATION_PREFIX}{generation}"


def parse_generation_directory_name(name: str) -> int | None:
    """The generation a directory name such as ``generation-3`` stands for, else None."""
    match = _GENERATION_DIRECTORY.fullmatch(name)
    return int(match.group(1)) if match else None


@dataclass(frozen=True, slots=True)
class GenerationLayout:
    """The directories of one generation of a pipeline rooted at ``root``."""

    root: str
    generation: int

    def __post_init__(self) -> None:
        generation_directory_name(self.generation)  # validates the number

    @property
    def _name(self) -> str:
        return generation_directory_name(self.generation)

    @property
    def checkpoints(self) -> str:
        return _join(self.root, "checkpoints", self._name)

    @property
    def checkpoint(self) -> str:
        """The windowed aggregation's checkpoint: the one the upgrade reasons about."""
        return _join(self.checkpoints, "aggregates")

    @property
    def quarantine_checkpoint(self) -> str:
        return _join(self.checkpoints, "quarantine")

    @property
    def run_lock(self) -> str:
        return _join(self.checkpoints, "run.lock")

    @property
    def output(self) -> str:
        return _join(output_root(self.root), self._name)

    @property
    def quarantine(self) -> str:
        return _join(quarantine_root(self.root), self._name)

    @property
    def initial_offsets(self) -> str:
        """Where the Python source keeps its first resolved offsets, as the built-in does."""
        return _join(self.checkpoint, "sources", "0", "0")

    @property
    def quarantine_initial_offsets(self) -> str:
        return _join(self.quarantine_checkpoint, "sources", "0", "0")


def output_root(root: str) -> str:
    return _join(root, "output")


def quarantine_root(root: str) -> str:
    return _join(root, "quarantine")


TABLE_DIRECTORY = "table"


def table_location(root: str, *, quarantine: bool = False) -> str:
    """The one table every generation appends to, when the sink is a table (Delta) and the
    settings put it nowhere else (``sink.table_location``); the quarantine's always."""
    return _join(quarantine_root(root) if quarantine else output_root(root), TABLE_DIRECTORY)
