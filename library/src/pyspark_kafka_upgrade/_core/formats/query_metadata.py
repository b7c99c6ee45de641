"""The checkpoint's ``metadata`` file: ``{"id":"<query id>"}``, written when a query first starts.

The id stays the same across restarts on the same checkpoint (each run gets a new run id),
so ledger records of this checkpoint carry it.
"""

from __future__ import annotations

from pyspark_kafka_upgrade._core.formats.format_errors import CorruptCheckpointError
from pyspark_kafka_upgrade._core.formats.log_files import parse_json_object, split_lines

EXAMPLE = '{"id":"<query id>"}'


def parse_query_metadata(content: bytes, *, where: str) -> str:
    """The query id in the content of ``metadata``."""
    lines = [line for line in split_lines(content, where) if line.strip()]
    if not lines:
        raise CorruptCheckpointError(f"{where} is empty; expected {EXAMPLE}")
    # Spark writes one line; joining tolerates a pretty-printed copy made by hand.
    data = parse_json_object("\n".join(lines), where, 1)
    query_id = data.get("id")
    if not isinstance(query_id, str) or not query_id:
        raise CorruptCheckpointError(f"{where} has no query id: expected {EXAMPLE}, got {data}")
    return query_id
