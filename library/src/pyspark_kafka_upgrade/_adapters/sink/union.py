"""Several generations' rows as one table: each row marked with its generation, the
generations unioned by column name.

An upgrade may add a metric or change the output's columns, so the generations are unioned
by name, a column a generation lacks being null in its rows, and the columns ordered as the
newest generation has them. Columns whose types clash are named in one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import reduce

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructType

from pyspark_kafka_upgrade._core.query.columns import WINDOW_END, WINDOW_START
from pyspark_kafka_upgrade._domain.records.sink import GENERATION, GenerationOutput
from pyspark_kafka_upgrade._domain.records.sink_errors import IncompatibleGenerationsError

__all__ = ["union_generations"]

_LEADING = (WINDOW_START, WINDOW_END)


def union_generations(
    outputs: Sequence[GenerationOutput], frames: Sequence[DataFrame]
) -> DataFrame:
    """``frames`` (the rows of ``outputs``, one frame each, oldest first) as one DataFrame:
    ``generation`` (int), ``window_start``, ``window_end``, then the others in the newest
    generation's order, then any that only older generations have."""
    for output, frame in zip(outputs, frames, strict=True):
        # withColumn would silently replace it (names match case-insensitively by default).
        if any(name.lower() == GENERATION for name in frame.columns):
            raise IncompatibleGenerationsError(
                f"{output.location} already has a column named {GENERATION!r}, the column "
                "that says which generation a row comes from; rename it in the aggregation"
            )
    marked = [
        frame.withColumn(GENERATION, F.lit(output.generation).cast(IntegerType()))
        for output, frame in zip(outputs, frames, strict=True)
    ]
    try:
        unioned = reduce(
            lambda left, right: left.unionByName(right, allowMissingColumns=True), marked
        )
    except AnalysisException as error:
        raise IncompatibleGenerationsError(_incompatibility(outputs, marked, error)) from None
    return unioned.select(*_column_order(frame.columns for frame in reversed(marked)))


def _column_order(newest_first: Iterable[Sequence[str]]) -> list[str]:
    seen: dict[str, None] = {}
    for columns in newest_first:
        seen.update(dict.fromkeys(columns))
    leading = [GENERATION, *(name for name in _LEADING if name in seen)]
    return [*leading, *(name for name in seen if name not in leading)]


def _incompatibility(
    outputs: Sequence[GenerationOutput], frames: Sequence[DataFrame], error: AnalysisException
) -> str:
    types: dict[str, dict[str, list[int]]] = {}
    for output, frame in zip(outputs, frames, strict=True):
        schema: StructType = frame.schema
        for field in schema.fields:
            by_type = types.setdefault(field.name, {})
            by_type.setdefault(field.dataType.simpleString(), []).append(output.generation)
    clashes = [
        f"{name} is "
        + " and ".join(
            f"{data_type} in generation(s) {', '.join(map(str, generations))}"
            for data_type, generations in by_type.items()
        )
        for name, by_type in types.items()
        if len(by_type) > 1
    ]
    reason = "; ".join(clashes) if clashes else str(error).splitlines()[0]
    return f"the generations' output cannot be read as one table: {reason}"
