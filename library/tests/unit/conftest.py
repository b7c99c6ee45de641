"""Fixtures the upgrade commands' unit tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pyspark_kafka_upgrade.testing._fake_world as fake
from pyspark_kafka_upgrade._application.upgrade import event_scan
from pyspark_kafka_upgrade._application.upgrade import gather as gathering
from pyspark_kafka_upgrade._application.upgrade.event_scan import EventSource
from pyspark_kafka_upgrade._core.query.event_parser import EventParser
from pyspark_kafka_upgrade._domain.records.scans import Record, ScanRange


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[fake.World]:
    """Generation 1 after 4 batches; the commands ask its broker and read its records."""
    made = fake.make_world(tmp_path / "world")

    def records(
        source: EventSource, span: ScanRange, parser: EventParser, on_batch: Any = None
    ) -> Iterator[Record]:
        yield from made.scan(span.partition, span.start, span.end)

    monkeypatch.setattr(gathering, "open_broker", lambda settings: made.broker)
    monkeypatch.setattr(event_scan, "event_times", records)
    yield made
