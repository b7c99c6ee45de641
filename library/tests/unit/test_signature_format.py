"""The pipeline signature as a document: format 2 round-trips, format 1 is read, a newer
format is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_kafka_upgrade._domain.records.signature import (
    FORMAT_VERSION,
    PipelineSignature,
    SignatureError,
    signature_digest,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._signatures import signature_of


def test_format_2_round_trips_with_the_events_and_the_query() -> None:
    signature = signature_of(PROJECT)
    document = signature.to_json()
    assert document["format_version"] == FORMAT_VERSION == 2
    assert [e["name"] for e in document["events"]] == [e.name for e in PROJECT.events]  # type: ignore[attr-defined]
    assert str(document["query"]).startswith("sha256:")
    assert PipelineSignature.from_json(document) == signature


def test_a_format_1_signature_is_read_without_events_or_query() -> None:
    document = signature_of(PROJECT).to_json()
    for key in ("format_version", "events", "query"):
        document.pop(key)
    old = PipelineSignature.from_json(document)
    assert (old.events, old.query) == ((), None)
    # The digest leaves the format out: an old ledger's digest is what it always was.
    assert signature_digest({**document, "format_version": 1}) == signature_digest(document)


def test_a_newer_format_is_refused_in_one_line(tmp_path: Path) -> None:
    document = {**signature_of(PROJECT).to_json(), "format_version": FORMAT_VERSION + 1}
    with pytest.raises(SignatureError) as refused:
        PipelineSignature.from_json(document)
    assert "newer than the 2" in str(refused.value) and "\n" not in str(refused.value)
