"""The Delta table's catalog name (``sink.table_name``), registered over its location in the
session's catalog: once, readable by name, and refused in one line when the name already
stands for another location or cannot be created."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._adapters.sink.delta_catalog import check_table_name, register_table
from pyspark_kafka_upgrade._domain.records.sink_errors import TableNameError


def delta_table(spark: SparkSession, path: Path, rows: int) -> str:
    spark.range(rows).write.format("delta").save(str(path))
    return str(path)


def unique_name() -> str:
    return f"default.counts_{uuid.uuid4().hex[:8]}"


def test_a_name_is_registered_once_over_the_location_and_reads_its_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    name, location = unique_name(), delta_table(spark, tmp_path / "t", 3)
    assert check_table_name(spark, name, location) is False

    register_table(spark, name, location)
    register_table(spark, name, location + "/")  # again: nothing to do, the same place

    assert check_table_name(spark, name, location) is True
    assert sorted(row.id for row in spark.table(name).collect()) == [0, 1, 2]
    spark.sql(f"DROP TABLE {name}")  # external: the files stay
    assert Path(location, "_delta_log").is_dir()


def test_a_name_standing_for_another_location_is_refused_naming_both(
    spark: SparkSession, tmp_path: Path
) -> None:
    name = unique_name()
    theirs = delta_table(spark, tmp_path / "theirs", 1)
    ours = delta_table(spark, tmp_path / "ours", 2)
    register_table(spark, name, theirs)
    try:
        with pytest.raises(TableNameError) as caught:
            register_table(spark, name, ours)
        line = str(caught.value)
        assert "\n" not in line
        assert line.startswith(f"sink.table_name {name} is registered at ")
        assert f"the pipeline writes its table at {ours}: readers of the name" in line
        # Where the name stands (as the catalog spells it), and the setting that keeps it.
        assert line.count(theirs) == 2 and "Set sink.table_location to " in line
        # Checked before a run's first commit too, when the name exists already.
        with pytest.raises(TableNameError):
            check_table_name(spark, name, ours)
        # Nothing was changed: the name still reads their table.
        assert spark.table(name).count() == 1
    finally:
        spark.sql(f"DROP TABLE {name}")


def test_a_catalog_refusal_is_one_line_naming_the_name_and_location(
    spark: SparkSession, tmp_path: Path
) -> None:
    location = delta_table(spark, tmp_path / "t", 1)
    name = f"no_such_schema_{uuid.uuid4().hex[:8]}.counts"
    with pytest.raises(TableNameError) as caught:
        register_table(spark, name, location)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"cannot register sink.table_name {name} over {location}: ")
    assert "SCHEMA_NOT_FOUND" in line or "not found" in line.lower(), line
