"""The pipeline's signature: what a checkpoint's compatibility depends on, as one typed record.

It is recorded in the ledger when a generation starts, and an upgrade plan names the two
signatures it was made between by their digests. ``advisor.advise`` compares the JSON forms,
following Spark's rules on what may change across a restart on the same checkpoint. The
history (the longest watermark delay any run on the checkpoint used) describes the
checkpoint's past, not the job: it is left out of the comparison and of the digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.values.json_record import (
    Field,
    FormatVersion,
    Group,
    JsonRecord,
    Shape,
)
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

OUTPUT_MODE = "append"
# 2: the events and the query's code are part of it. A signature without the key is of
# format 1, and lacks them.
FORMAT_VERSION = 2
FORMAT_KEY = "format_version"
# The recorded signature's key for what earlier runs on the checkpoint ran with.
HISTORY = "history"
MAX_WATERMARK_DELAY_MS = "max_watermark_delay_ms"


class SignatureError(PipelineError):
    """A stored signature that is not one: the message names the field."""


@dataclass(frozen=True, slots=True)
class SourceSignature:
    kind: str
    connector: str
    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class EventColumn:
    name: str
    type: str
    required: bool


@dataclass(frozen=True, slots=True)
class Aggregate:
    name: str
    expression: str


@dataclass(frozen=True, slots=True)
class PipelineSignature(JsonRecord):
    """Sources and topics, events, event time, window, keys, aggregates, output schema, the
    query's code, sink, mode, Spark version; and the window history of the checkpoint it was
    recorded for."""

    json_shape = Shape(
        FormatVersion(
            FORMAT_VERSION,
            key=FORMAT_KEY,
            absent=1,
            newer="the signature has format version {version}, newer than the {current} this "
            "version of the library reads: upgrade pyspark-kafka-upgrade",
        ),
        "sources",
        Field("events", absent=()),
        Group(
            "event_time",
            Field("event_time_source", key="source"),
            Field("event_time_field", key="field"),
        ),
        "window",
        "grouping_keys",
        "aggregates",
        "output_schema",
        Field("query", absent=None),
        Group("sink", Field("sink_format", key="format"), Field("sink_path", key="path")),
        "output_mode",
        "spark_version",
        Group(HISTORY, MAX_WATERMARK_DELAY_MS, optional=True),
        what="signature",
        error=SignatureError,
    )

    sources: tuple[SourceSignature, ...]
    event_time_source: str
    event_time_field: str
    window: WindowSpec
    grouping_keys: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    output_schema: tuple[Column, ...]
    sink_format: str
    sink_path: str
    output_mode: str
    spark_version: str
    # The events as the project declares them; () in a signature of format 1.
    events: tuple[EventColumn, ...] = ()
    # A digest of the project's query module (``generation.signature.query_digest``); None
    # in a signature of format 1.
    query: str | None = None
    # The longest watermark delay any run on the checkpoint used; None: none recorded yet.
    max_watermark_delay_ms: int | None = None

    def digest(self) -> str:
        """A short fingerprint of what the advisor compares: equal digests, same pipeline."""
        return signature_digest(self.to_json())

    def with_history(self, recorded: Mapping[str, object] | None) -> PipelineSignature:
        """This signature as a run records it over ``recorded``, the signature an earlier
        run on the same checkpoint recorded, as stored (None for the first run): with the
        longest watermark delay any of them used."""
        merged = with_history(self.to_json(), recorded)
        return replace(self, max_watermark_delay_ms=max_watermark_delay_ms(merged))


def signature_digest(document: Mapping[str, object]) -> str:
    """``sha256:`` and 16 hex digits of the canonical JSON of a signature, history left out."""
    compared = {key: value for key, value in document.items() if key not in (HISTORY, FORMAT_KEY)}
    text = json.dumps(compared, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def with_history(
    signature: Mapping[str, object], recorded: Mapping[str, object] | None
) -> dict[str, object]:
    """``signature`` as a run records it: with the history of ``recorded``, the signature
    an earlier run on the same checkpoint recorded (None for the first run)."""
    longest = max(_delay_of(signature), 0 if recorded is None else max_watermark_delay_ms(recorded))
    return {**signature, HISTORY: {MAX_WATERMARK_DELAY_MS: longest}}


def max_watermark_delay_ms(recorded: Mapping[str, object]) -> int:
    """The largest watermark delay any run recorded in ``recorded`` used (0 if none)."""
    history = recorded.get(HISTORY)
    recorded_max = (
        _integer(history.get(MAX_WATERMARK_DELAY_MS)) if isinstance(history, Mapping) else 0
    )
    return max(_delay_of(recorded), recorded_max)


def _delay_of(signature: Mapping[str, object]) -> int:
    window = signature.get("window")
    return _integer(window.get("watermark_delay_ms")) if isinstance(window, Mapping) else 0


def _integer(value: object) -> int:
    # JSON true is no delay; a missing or malformed value counts as none recorded.
    return value if type(value) is int else 0
