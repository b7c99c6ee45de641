"""Why a checkpoint or a sink log cannot be read. Each message names the file or directory."""

from __future__ import annotations

from pyspark_kafka_upgrade._domain.errors import PipelineError


class CheckpointError(PipelineError):
    """Base of the errors about a checkpoint's or a sink log's files."""


class NotACheckpointError(CheckpointError):
    """The path is missing, or holds neither a ``metadata`` file nor an ``offsets/`` log."""


class CorruptCheckpointError(CheckpointError):
    """A log file that cannot be parsed: truncated, not UTF-8, not the JSON Spark writes."""


class UnsupportedLogVersionError(CheckpointError):
    """A log file in a format version this code does not know, most likely from a newer Spark.

    Guessing at a newer format could misread the watermark or the offsets an upgrade relies
    on, so it is refused rather than read as the nearest known version.
    """
