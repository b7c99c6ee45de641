"""Read a file sink's ``_spark_metadata`` log through ``storage``: which files it committed.

A generation's output is only what its log lists (FACTS 6): Spark reads a sink directory
through that log, and so does everything here that reads output or checks a sink.
"""

from __future__ import annotations

import itertools

from pyspark_kafka_upgrade._adapters.storage.filesystem import open_location
from pyspark_kafka_upgrade._core.formats.format_errors import CorruptCheckpointError
from pyspark_kafka_upgrade._core.formats.log_files import sink_batch_of
from pyspark_kafka_upgrade._core.formats.sink_log import (
    SinkFileEntry,
    SinkLog,
    live_files,
    parse_sink_log_file,
)

SINK_LOG_DIR = "_spark_metadata"


def read_sink_log(uri: str) -> SinkLog:
    """Read ``<uri>/_spark_metadata``; a sink with no log yet has no batches and no files."""
    log_dir = open_location(uri).child(SINK_LOG_DIR)
    names: dict[int, str] = {}
    compacted: list[int] = []
    for name in log_dir.list_names():
        parsed = sink_batch_of(name)
        if parsed is None:
            continue
        batch_id, compact = parsed
        # A compaction batch's file is N.compact; a plain N next to it would be a leftover.
        if compact or batch_id not in names:
            names[batch_id] = name
        if compact:
            compacted.append(batch_id)
    batch_ids = tuple(sorted(names))
    compact_batch_id = max(compacted) if compacted else None
    needed = [batch for batch in batch_ids if compact_batch_id is None or batch >= compact_batch_id]
    for previous, batch in itertools.pairwise(needed):
        if batch != previous + 1:
            raise CorruptCheckpointError(
                f"{log_dir.uri} has batches {previous} and {batch} but not {previous + 1}; "
                "the files of the batches in between cannot be known"
            )
    entries: list[SinkFileEntry] = []
    for batch in needed:
        location = log_dir.child(names[batch])
        entries.extend(parse_sink_log_file(location.read_bytes(), where=location.uri))
    return SinkLog(
        uri=uri, batch_ids=batch_ids, compact_batch_id=compact_batch_id, files=live_files(entries)
    )
