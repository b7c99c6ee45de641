"""Open the sink the settings' ``[sink]`` section names, on a pipeline root.

Each kind of sink is imported by name from ``values.catalog.SINKS``, as the ledger's stores
are: a sink whose client library is an extra (a table format) loads only where it is used.
Every kind is built the same way, ``Kind(root, sink_format, quarantine=..., located=...)``;
a table sink also gets its table's location and catalog name (``sink.table_location``,
``sink.table_name``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._core.settings.sections import SinkSettings
from pyspark_kafka_upgrade._domain.records.sink import Sink
from pyspark_kafka_upgrade._domain.values.catalog import SINKS, SinkFormat
from pyspark_kafka_upgrade._domain.values.layout import table_location

__all__ = ["open_sink", "table_of"]


def open_sink(
    sink: SinkSettings | SinkFormat,
    root: str,
    *,
    quarantine: bool = False,
    located: Mapping[int, str] | None = None,
) -> Sink:
    """The sink of the pipeline rooted at ``root`` (``pipeline.root``, made absolute by the
    caller), as the settings' ``[sink]`` say; a format alone is a table sink at its default
    place. Opening reads and writes nothing.

    ``quarantine``: the sink of the malformed records, beside the output. ``located``:
    generations whose output is elsewhere than the layout puts it (``checkpoint show
    --sink``)."""
    settings = sink if isinstance(sink, SinkSettings) else SinkSettings(format=sink)
    kind = SINKS[settings.format]
    sink_class = getattr(importlib.import_module(f".{kind.module}", __package__), kind.class_name)
    if not kind.one_table:
        files: Sink = sink_class(root, settings.format, quarantine=quarantine, located=located)
        return files
    location, name = table_of(settings, root, quarantine=quarantine)
    table: Sink = sink_class(
        root, settings.format, quarantine=quarantine, located=located, location=location, name=name
    )
    return table


def table_of(sink: SinkSettings, root: str, *, quarantine: bool = False) -> tuple[str, str]:
    """The table's location (absolute) and catalog name ("" for none) of a table sink. The
    quarantine's table stays at ``<root>/quarantine/table``, with no name: it is the
    pipeline's own, not its readers'."""
    if quarantine or not sink.table_location:
        return table_location(root, quarantine=quarantine), ""
    return absolute_uri(sink.table_location), sink.table_name
