"""`output show` on a pipeline's output written by real streaming queries (``parquet_root``:
three generations, one that never committed, uncommitted files beside the committed ones)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._application.output_show import (
    InvalidLimitError,
    show_output,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.sink_errors import (
    NoOutputError,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT


def settings_for(root: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    # ./pipeline.toml is read when present; look where there is none.
    monkeypatch.chdir(root.parent)
    overrides = [f"pipeline.root={root}", "sink.format=parquet"]
    return load_settings(PROJECT, env={}, overrides=overrides).settings


def test_show_output_prints_a_summary_and_the_rows_in_window_order(
    spark: SparkSession, parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = show_output(
        settings_for(parquet_root, monkeypatch), spark=spark, limit=None, as_json=False
    )

    assert text == "\n".join(
        [
            f"output        {parquet_root}/output (parquet)",
            "generation 1  3 rows (last batch 1)",
            "generation 2  2 rows (last batch 0)",
            "generation 3  nothing committed yet",
            "rows shown    5 of 5, by window_start, generation, article_id",
            "",
            "generation  window_start          window_end            article_id  views  users",
            "         1  2025-11-22T10:00:00Z  2025-11-22T10:10:00Z  a               3   null",
            "         1  2025-11-22T10:00:00Z  2025-11-22T10:10:00Z  b               1   null",
            "         1  2025-11-22T10:10:00Z  2025-11-22T10:20:00Z  a               2   null",
            "         2  2025-11-22T10:20:00Z  2025-11-22T10:30:00Z  a               5      4",
            "         2  2025-11-22T10:20:00Z  2025-11-22T10:30:00Z  c               1      1",
        ]
    )


def test_show_output_of_one_generation_with_a_limit_takes_a_session_factory(
    spark: SparkSession, parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def factory() -> SparkSession:
        calls.append("called")
        return spark

    session: Callable[[], SparkSession] = factory
    text = show_output(
        settings_for(parquet_root, monkeypatch),
        spark=session,
        limit=1,
        as_json=False,
        generation=2,
    )

    assert calls == ["called"]
    assert text == "\n".join(
        [
            f"output        {parquet_root}/output (parquet)",
            "generation 2  2 rows (last batch 0)",
            "rows shown    1 of 2, by window_start, generation, article_id",
            "",
            "generation  window_start          window_end            article_id  views  users",
            "         2  2025-11-22T10:20:00Z  2025-11-22T10:30:00Z  a               5      4",
        ]
    )


def test_show_output_as_json_has_stable_keys(
    spark: SparkSession, parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = show_output(settings_for(parquet_root, monkeypatch), spark=spark, limit=2, as_json=True)

    output = f"{parquet_root}/output"
    row = {
        "generation": 1,
        "window_start": "2025-11-22T10:00:00Z",
        "window_end": "2025-11-22T10:10:00Z",
    }
    expected = {
        "output": output,
        "format": "parquet",
        "generations": [
            {"generation": 1, "directory": f"{output}/generation-1", "last_batch_id": 1, "rows": 3},
            {"generation": 2, "directory": f"{output}/generation-2", "last_batch_id": 0, "rows": 2},
            {
                "generation": 3,
                "directory": f"{output}/generation-3",
                "last_batch_id": None,
                "rows": 0,
            },
        ],
        "total_rows": 5,
        "order_by": ["window_start", "generation", "article_id"],
        "columns": ["generation", "window_start", "window_end", "article_id", "views", "users"],
        "rows": [
            {**row, "article_id": "a", "views": 3, "users": None},
            {**row, "article_id": "b", "views": 1, "users": None},
        ],
    }
    assert text == json.dumps(expected, indent=2)


def test_show_output_refuses_a_negative_limit(
    spark: SparkSession, parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(InvalidLimitError, match="must be 0 or more, got -1"):
        show_output(settings_for(parquet_root, monkeypatch), spark=spark, limit=-1, as_json=False)


def test_show_output_with_nothing_committed_does_not_start_spark(
    parquet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_spark() -> SparkSession:
        raise AssertionError("Spark was started")

    with pytest.raises(NoOutputError) as raised:
        show_output(settings_for(parquet_root, monkeypatch), spark=no_spark, limit=5, generation=3)

    assert str(raised.value) == f"no committed batch yet in {parquet_root}/output/generation-3"
