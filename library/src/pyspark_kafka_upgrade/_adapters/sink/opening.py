"""Open the sink the settings' ``sink.format`` names, on a pipeline root.

Each kind of sink is imported by name from ``values.catalog.SINKS``, as the ledger's stores
are: a sink whose client library is an extra (a table format) loads only where it is used.
Every kind is built the same way, ``Kind(root, sink_format, quarantine=..., located=...)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from pyspark_kafka_upgrade._domain.records.sink import Sink
from pyspark_kafka_upgrade._domain.values.catalog import SINKS, SinkFormat

__all__ = ["open_sink"]


def open_sink(
    sink_format: SinkFormat,
    root: str,
    *,
    quarantine: bool = False,
    located: Mapping[int, str] | None = None,
) -> Sink:
    """The sink of the pipeline rooted at ``root`` (``pipeline.root``, made absolute by the
    caller), writing ``sink_format``. Opening reads and writes nothing.

    ``quarantine``: the sink of the malformed records, beside the output. ``located``:
    generations whose output is elsewhere than the layout puts it (``checkpoint show
    --sink``)."""
    kind = SINKS[sink_format]
    sink_class = getattr(importlib.import_module(f".{kind.module}", __package__), kind.class_name)
    sink: Sink = sink_class(root, sink_format, quarantine=quarantine, located=located)
    return sink
