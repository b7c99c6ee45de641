"""Writing generations through a sink, as the pipeline's queries do, from rows already shaped
like the windowed aggregates; and every sink there is, for the contract tests.

Each generation is a file-source query over one JSON file per micro-batch, started through
``Sink.start`` with its own checkpoint and run "available now": one batch per file, in order,
then it stops. No Kafka is needed.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_kafka_upgrade._adapters.sink.opening import (
    open_sink,
)
from pyspark_kafka_upgrade._domain.records.sink import (
    Sink,
    Trigger,
)
from pyspark_kafka_upgrade._domain.values.catalog import (
    SINKS,
    SinkFormat,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)

# Every format of every sink: the library's suite must test them all.
SINK_FORMATS: list[SinkFormat] = list(SINKS)
QUERY_TIMEOUT_S = 60
V1 = "window_start TIMESTAMP, window_end TIMESTAMP, article_id STRING, views BIGINT"
V1_COLUMNS = [column.split()[0] for column in V1.split(", ")]
# Version 2 of the pipeline added a metric.
V2 = V1 + ", users BIGINT"
START = datetime(2025, 11, 22, 10, 0, tzinfo=UTC)
Row = dict[str, Any]


def sink_of(root: Path, sink_format: SinkFormat) -> Sink:
    """The sink of the pipeline rooted at ``root``, as the settings would open it."""
    return open_sink(sink_format, str(root))


def window(minute: int, article: str, views: int, **more: int) -> Row:
    start = START + timedelta(minutes=minute)
    return {
        "window_start": start,
        "window_end": start + timedelta(minutes=10),
        "article_id": article,
        "views": views,
        **more,
    }


def as_json_line(row: Row) -> str:
    return json.dumps(
        {
            name: value.isoformat().replace("+00:00", "Z") if isinstance(value, datetime) else value
            for name, value in row.items()
        }
    )


def write_generation(
    spark: SparkSession,
    root: Path,
    generation: int,
    batches: Sequence[Sequence[Row]],
    *,
    schema: str,
    file_format: SinkFormat,
) -> None:
    """Run one generation's query over ``batches`` through the sink ``file_format`` names,
    one micro-batch each, until done. Called again with more batches, it goes on from its
    checkpoint, as a restarted run does."""
    source = root.parent / f"source-{root.name}-{generation}"
    source.mkdir(parents=True, exist_ok=True)
    done = len(list(source.glob("batch-*.json")))
    for number, batch in enumerate(batches, start=done):
        lines = "".join(as_json_line(row) + "\n" for row in batch)
        (source / f"batch-{number}.json").write_text(lines, encoding="utf-8")
    frame = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(source))
    query = sink_of(root, file_format).start(
        frame,
        generation=generation,
        query_name=f"generation_{generation}_{uuid.uuid4().hex[:8]}",
        checkpoint=GenerationLayout(str(root), generation).checkpoint,
        trigger=Trigger(available_now=True),
    )
    try:
        finished = query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()
    assert finished, f"generation {generation} did not finish in {QUERY_TIMEOUT_S}s"
    assert query.exception() is None


def plant_uncommitted_file(
    spark: SparkSession,
    directory: Path,
    rows: Sequence[Row],
    *,
    schema: str,
    file_format: str,
) -> None:
    """Put a part file no ``_spark_metadata`` names into ``directory``, as a failed batch would."""
    scratch = directory.parent.parent.parent / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    frame = spark.createDataFrame([tuple(row.values()) for row in rows], schema)
    frame.coalesce(1).write.format(file_format).save(str(scratch))
    (part,) = scratch.glob("part-*")
    directory.mkdir(parents=True, exist_ok=True)
    shutil.move(part, directory / f"part-00000-00000000-uncommitted-c000.{file_format}")
    shutil.rmtree(scratch)


def data_file_format(sink_format: SinkFormat) -> str:
    """The format of a sink's data files: a Delta table's are parquet."""
    return "parquet" if sink_format == "delta" else sink_format


def local_path(uri: str) -> Path:
    """The local file a ``file:`` URI (as a sink's log names it, %-escaped) or a path is."""
    return Path(unquote(urlparse(uri).path) if uri.startswith("file:") else uri)


def table(frame: DataFrame) -> list[tuple[str | None, ...]]:
    """Rows as text (the session's time zone is UTC), in a stable order."""
    text = frame.select(*(F.col(name).cast("string") for name in frame.columns))
    return sorted((tuple(row) for row in text.collect()), key=repr)


def article_ids(frame: DataFrame) -> list[str]:
    return sorted(row.article_id for row in frame.select("article_id").collect())
