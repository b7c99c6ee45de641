"""Listeners get each progress event as the JSON Spark gives for ``query.lastProgress``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._waiting as waiting
from pyspark_kafka_upgrade._adapters.spark.progress_events import (
    JsonProgressListener,
)


class Recorder(JsonProgressListener):
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.fallbacks = 0

    def on_progress(self, progress: dict[str, Any]) -> None:
        self.events.append(progress)

    def onQueryProgress(self, event: Any) -> None:
        self.fallbacks += 1  # PySpark's own, field-by-field conversion: the slow path
        super().onQueryProgress(event)


def test_progress_reaches_the_listener_as_one_json_document(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.json").write_text(json.dumps({"n": 1}) + "\n" + json.dumps({"n": 2}) + "\n")
    recorder = Recorder()
    spark.streams.addListener(recorder)
    try:
        query = (
            spark.readStream.schema("n long")
            .json(str(source))
            .writeStream.queryName("progress_events_test")
            .format("noop")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        reported = query.lastProgress
        assert reported is not None
        waiting.wait_until(
            lambda: any(e["batchId"] == reported["batchId"] for e in recorder.events),
            timeout=60,
            message="the listener never received the query's last progress event",
        )
    finally:
        spark.streams.removeListener(recorder)
    event = next(e for e in recorder.events if e["batchId"] == reported["batchId"])
    assert event["name"] == "progress_events_test"
    assert event["numInputRows"] == reported["numInputRows"] == 2
    # lastProgress gives a source's offsets as JSON text; the event's JSON embeds them.
    assert event["sources"][0]["endOffset"] == json.loads(reported["sources"][0]["endOffset"])
    assert recorder.fallbacks == 0
