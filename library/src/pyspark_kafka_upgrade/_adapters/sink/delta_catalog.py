"""The Delta table's catalog name (``sink.table_name``), registered over its location.

The pipeline writes by location: the upgrade reads the table's log outside Spark, which
needs the location, not a name only a session can resolve. The name is for readers: an
external table, ``CREATE TABLE IF NOT EXISTS <name> USING delta LOCATION '<location>'``, in
whatever catalog the session has (a Hive metastore, Unity Catalog). Spark creates it only
once the location holds a Delta log (a table without a schema cannot be created), so a run
registers it at its start when the log exists, else right after its first commit
(``delta_writer``). A name that stands for another location is refused: its readers would
read another table than the one the pipeline writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from pyspark_kafka_upgrade._adapters.storage.filesystem import location_key
from pyspark_kafka_upgrade._domain.records.sink_errors import TableNameError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["check_table_name", "register_table"]

T = TypeVar("T")


def check_table_name(spark: SparkSession, name: str, location: str) -> bool:
    """Whether ``name`` is registered over ``location`` already (False: not registered);
    TableNameError when it stands for another location."""
    registered = _registered_location(spark, name, location)
    if registered is None:
        return False
    if location_key(registered) != location_key(location):
        raise TableNameError(
            f"sink.table_name {name} is registered at {registered or 'no location'}, and the "
            f"pipeline writes its table at {location}: readers of the name would read another "
            f"table. Set sink.table_location to {registered} if that is this pipeline's table, "
            "else choose another name, or drop the old one (DROP TABLE) if it is unused"
        )
    return True


def register_table(spark: SparkSession, name: str, location: str) -> None:
    """Register ``name`` as the external table at ``location`` (which holds a Delta log),
    unless it is already; TableNameError when it stands for another location."""
    if check_table_name(spark, name, location):
        return
    _sql(
        spark,
        f"CREATE TABLE IF NOT EXISTS {name} USING delta LOCATION {_literal(location)}",
        name,
        location,
    )
    # IF NOT EXISTS skips quietly when another writer took the name meanwhile.
    if not check_table_name(spark, name, location):
        raise TableNameError(
            f"sink.table_name {name} was not registered over {location}: the catalog of this "
            "Spark session did not keep it (spark.sql.catalogImplementation, the metastore)"
        )


def _registered_location(spark: SparkSession, name: str, location: str) -> str | None:
    """The location the catalog gives ``name``; None when there is no such table, "" when it
    has none (a view)."""
    if not _catalog_call(lambda: spark.catalog.tableExists(name), name, location):
        return None
    rows = _sql(spark, f"DESCRIBE TABLE EXTENDED {name}", name, location).collect()
    found = [str(row[1]).strip() for row in rows if str(row[0]).strip() == "Location"]
    return found[0] if found else ""


def _sql(spark: SparkSession, statement: str, name: str, location: str) -> DataFrame:
    return _catalog_call(lambda: spark.sql(statement), name, location)


def _catalog_call(call: Callable[[], T], name: str, location: str) -> T:
    from pyspark.errors import PySparkException

    try:
        return call()
    except PySparkException as error:
        text = str(error).strip()
        first = text.splitlines()[0] if text else type(error).__name__
        raise TableNameError(
            f"cannot register sink.table_name {name} over {location}: {first}"
        ) from None


def _literal(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
