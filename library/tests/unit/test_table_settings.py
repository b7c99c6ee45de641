"""``sink.table_location`` and ``sink.table_name``: where the one Delta table lives and the
name readers find it by. Both are the table sink's only, a name needs a location, and the
location resolves as ``pipeline.root`` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._core.settings import Settings, load_settings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._example.pipeline import PROJECT

DELTA = "sink.format=delta"


@pytest.fixture(autouse=True)
def _no_local_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ./pipeline.toml is read when present, and relative paths resolve here.
    monkeypatch.chdir(tmp_path)


def settings(*overrides: str) -> Settings:
    return load_settings(PROJECT, env={}, overrides=["pipeline.root=data", *overrides]).settings


def refusal(*overrides: str) -> str:
    with pytest.raises(ConfigError) as caught:
        settings(*overrides)
    line = str(caught.value)
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    "name",
    [
        "analytics.page_view_counts",
        "main.analytics.page_view_counts",
        "`my-catalog`.analytics.`page views`",
        "_private.T2",
    ],
)
def test_a_schema_or_catalog_qualified_name_is_a_table_name(name: str) -> None:
    sink = settings(DELTA, "sink.table_location=s3://bucket/t", f"sink.table_name={name}").sink
    assert sink.table_name == name


@pytest.mark.parametrize(
    "name",
    [
        "page_view_counts",  # no schema: which one would be the session's current one's
        "a.b.c.d",
        "main..counts",
        "main.analytics.",
        "2020.counts",
        "main.`analytics`x",
        "main.``",
        "main.analytics.page-views",
        "main.analytics.counts; DROP TABLE x",
    ],
)
def test_anything_else_is_refused_naming_the_setting_its_value_and_the_rule(name: str) -> None:
    line = refusal(DELTA, "sink.table_location=s3://bucket/t", f"sink.table_name={name}")
    assert line.startswith(f"sink.table_name = {name!r} (from --set): ")
    assert "give schema.table or catalog.schema.table" in line


@pytest.mark.parametrize("file_format", ["parquet", "orc"])
@pytest.mark.parametrize(
    "setting", ["sink.table_location=s3://bucket/t", "sink.table_name=analytics.counts"]
)
def test_a_file_sink_refuses_both(file_format: str, setting: str) -> None:
    line = refusal(f"sink.format={file_format}", setting)
    key, _, value = setting.partition("=")
    assert line == (
        f"{key} = {value!r} (from --set): is for a table sink, and sink.format = "
        f'"{file_format}" writes a directory per generation under pipeline.root: remove it, '
        'or set sink.format = "delta"'
    )


def test_a_name_without_a_location_a_managed_table_is_refused_saying_why() -> None:
    line = refusal(DELTA, "sink.table_name=main.analytics.counts")
    assert line.startswith("sink.table_name = 'main.analytics.counts' (from --set): needs ")
    assert "reads the table's log outside Spark by its location" in line
    assert "set sink.table_location" in line and "external location" in line


def test_a_blank_location_is_refused() -> None:
    line = refusal(DELTA, "sink.table_location=  ")
    assert line.startswith("sink.table_location = '  ' (from --set): must not be blank")


def test_the_table_defaults_to_the_roots_and_a_relative_location_resolves_as_the_root_does(
    tmp_path: Path,
) -> None:
    root = str(tmp_path / "data")
    default = open_sink(settings(DELTA).sink, root)
    assert default.location(1) == default.location(7) == f"{root}/output/table"

    relative = settings(DELTA, "sink.table_location=tables/counts", "sink.table_name=a.counts")
    sink = open_sink(relative.sink, root)
    # As pipeline.root: against the working directory, made absolute.
    assert sink.location(1) == os.path.join(os.getcwd(), "tables", "counts")
    assert sink.location(1) == str(tmp_path / "tables" / "counts")
    # The quarantine keeps its place under the root, and no name.
    assert open_sink(relative.sink, root, quarantine=True).location(1) == (
        f"{root}/quarantine/table"
    )


def test_a_uri_location_is_kept_as_written() -> None:
    location = "abfss://lake@account.dfs.core.windows.net/pipelines/page-views/table"
    sink = open_sink(settings(DELTA, f"sink.table_location={location}").sink, "/data")
    assert sink.location(3) == location


def test_a_file_sink_is_opened_as_before() -> None:
    sink = open_sink(settings().sink, "/data")
    assert sink.location(2) == "/data/output/generation-2"
