"""Fixtures several unit tests share: the upgrade commands' world, and a pipeline's output
written through the file sink."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._fake_world as fake
import support.sinks as sinks
from pyspark_kafka_upgrade._application.upgrade import event_scan
from pyspark_kafka_upgrade._application.upgrade import gather as gathering
from pyspark_kafka_upgrade._application.upgrade.event_fast_path import FastEventParser
from pyspark_kafka_upgrade._application.upgrade.event_scan import EventSource
from pyspark_kafka_upgrade._core.planner.tightening import in_batches
from pyspark_kafka_upgrade._domain.records.scans import RecordBatch, ScanRange
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[fake.World]:
    """Generation 1 after 4 batches; the commands ask its broker and read its records."""
    made = fake.make_world(tmp_path / "world")

    def records(
        source: EventSource, span: ScanRange, parser: FastEventParser, on_batch: Any = None
    ) -> Iterator[RecordBatch]:
        yield from in_batches(made.scan(span.partition, span.start, span.end))

    monkeypatch.setattr(gathering, "open_broker", lambda settings: made.broker)
    monkeypatch.setattr(event_scan, "event_times", records)
    yield made


@pytest.fixture(scope="session")
def parquet_root(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pipeline root whose output holds generation 1 (two batches), 2 (version 2, one
    batch, plus an uncommitted file), and 3, whose query never committed: a directory with
    an uncommitted file and no log. Read only: the file sink's and ``output show``'s tests
    share it."""
    root = tmp_path_factory.mktemp("parquet") / "pipeline"
    window = sinks.window
    sinks.write_generation(
        spark,
        root,
        1,
        [[window(0, "a", 3), window(0, "b", 1)], [window(10, "a", 2)]],
        schema=sinks.V1,
        file_format="parquet",
    )
    sinks.write_generation(
        spark,
        root,
        2,
        [[window(20, "c", 1, users=1), window(20, "a", 5, users=4)]],
        schema=sinks.V2,
        file_format="parquet",
    )
    for generation in (2, 3):
        sinks.plant_uncommitted_file(
            spark,
            Path(GenerationLayout(str(root), generation).output),
            [window(60, f"stray-{generation}", 99, users=99)],
            schema=sinks.V2,
            file_format="parquet",
        )
    return root
