import inspect

import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from pyspark_kafka_upgrade._adapters.kafka.schema import (
    arrow_schema,
    spark_schema,
)


def test_schema_is_the_built_in_sources() -> None:
    assert spark_schema(include_headers=False).simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>"
    )
    assert spark_schema(include_headers=True).fields[-1].simpleString() == (
        "headers:array<struct<key:string,value:binary>>"
    )


@pytest.mark.skipif(
    "timezone" not in inspect.signature(to_arrow_schema).parameters,
    reason="PySpark 4.0 checks only the column names of a RecordBatch, not its Arrow types",
)
@pytest.mark.parametrize("include_headers", [False, True])
def test_arrow_batches_have_exactly_the_schema_spark_checks_for(include_headers: bool) -> None:
    # PySpark 4.2+ refuses a RecordBatch whose Arrow schema differs from this one.
    expected = to_arrow_schema(spark_schema(include_headers), timezone="UTC")
    assert arrow_schema(include_headers).equals(expected)
