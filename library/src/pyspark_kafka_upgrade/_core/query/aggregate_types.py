"""The windowed aggregation's output schema, derived without Spark.

The upgrade planner compares the output schema a generation was started with against the
one new settings would build, and must do so without starting a JVM. The aggregations are
a closed set: grouping keys are event columns, and each metric is one function of
``validation.METRIC_FUNCTIONS`` over one column. So the output types follow from a table of
what Spark's analyzer answers for each (function, input type), and the refusals from that
table and from Spark's rules on column names.

``tests/unit/test_aggregate_types.py`` checks all of it against Spark itself, asked the way
``generation/signature.py`` asks it: the reference query's steps planned over
``valid_events(parse_events(...))`` of an empty frame of Kafka rows without headers.

It assumes Spark's default for the one session conf that changes these answers,
``spark.sql.caseSensitive=false``. ``spark.sql.ansi.enabled`` changes none of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from pyspark_kafka_upgrade._core.query.columns import (
    EVENT_TIME,
    KAFKA_COLUMNS,
    KAFKA_POSITION,
    MALFORMED_REASON,
    WINDOW_END,
    WINDOW_START,
)
from pyspark_kafka_upgrade._core.query.event_fields import check_columns, payload_fields
from pyspark_kafka_upgrade._domain.values.project import EVENT_TYPES, EventField
from pyspark_kafka_upgrade._domain.values.validation import (
    InvalidValueError,
    MetricSpec,
    check_identifier,
)

# The types an event column may have, as Spark's simpleString names them; the table's columns.
INPUT_TYPES: Final = EVENT_TYPES

# What Spark 4.2's analyzer answered when asked (the test asks again); None where it refuses.
# sum and avg refuse a boolean but cast a string or a timestamp to double, with ANSI mode on
# (Spark 4's default) as with it off.
# fmt: off
_GRID: Final[Mapping[str, tuple[str | None, ...]]] = {
    #                         string    boolean    int       bigint    double    timestamp
    "count":                 ("bigint", "bigint",  "bigint", "bigint", "bigint", "bigint"),
    "sum":                   ("double", None,      "bigint", "bigint", "double", "double"),
    "min":                   ("string", "boolean", "int",    "bigint", "double", "timestamp"),
    "max":                   ("string", "boolean", "int",    "bigint", "double", "timestamp"),
    "avg":                   ("double", None,      "double", "double", "double", "double"),
    "approx_count_distinct": ("bigint", "bigint",  "bigint", "bigint", "bigint", "bigint"),
}
# fmt: on

AGGREGATE_TYPES: Final[Mapping[tuple[str, str], str | None]] = {
    (function, input_type): output
    for function, row in _GRID.items()
    for input_type, output in zip(INPUT_TYPES, row, strict=True)
}
"""(function, input type) -> the metric's output type, or None where Spark refuses it."""

# What a function takes, for the message when the table refuses its input.
_TAKES: Final[Mapping[str, str]] = {
    "sum": "a numeric column (or a string or timestamp, which Spark casts to double)",
    "avg": "a numeric column (or a string or timestamp, which Spark casts to double)",
}

# aggregation._aggregate counts lit(1) for "*", whatever the function.
_STAR_TYPE: Final = "int"
_WINDOW: Final = "window"
# window() over a timestamp column; event_time is always one.
_WINDOW_BOUND_TYPE: Final = "timestamp"
_KAFKA_TYPES: Final[Mapping[str, str]] = {
    "key": "binary",
    "value": "binary",
    "topic": "string",
    "partition": "int",
    "offset": "bigint",
    "timestamp": "timestamp",
    "timestampType": "int",
}


class InvalidAggregateTypeError(InvalidValueError):
    """A metric's function does not take its column's type (Spark refuses it at analysis)."""


class AmbiguousColumnError(InvalidValueError):
    """Two columns Spark would have to tell apart by the case of their names alone."""


def event_columns(
    events: Sequence[EventField], *, time_source: str, time_field: str
) -> list[tuple[str, str]]:
    """(name, simpleString type) of the columns ``valid_events`` yields, in its order.

    Refuses, with :class:`InvalidValueError`, the schemas and settings ``parse_events`` or
    ``valid_events`` refuse, including names that differ only in case from another column.
    """
    fields = payload_fields(events, time_source, time_field)
    declared = {output: field.name for output, field in fields}
    # parse_events keys its columns by output name: a repeated name keeps its first place
    # and its last type.
    types: dict[str, str] = {output: field.type for output, field in fields}
    if time_source == "kafka":
        types[EVENT_TIME] = _KAFKA_TYPES["timestamp"]
    clashes = sorted(set(types) & set(KAFKA_COLUMNS))
    if clashes:
        raise InvalidValueError(f"event fields {clashes} clash with the Kafka columns")

    def field_role(output: str) -> str:
        if output == EVENT_TIME:
            return f"the event time column {EVENT_TIME!r}"
        return f"event field {declared[output]!r}"

    kafka = [_Column(name, f"the Kafka column {name!r}") for name in KAFKA_COLUMNS]
    # parse_events stages each output as "_<name>" beside its parsed JSON, "_json", and
    # reads them back by name, so these names must be unambiguous too.
    staged = [
        *kafka,
        _Column("_json", "parse_events' column '_json'"),
        *(_Column(f"_{name}", f"{field_role(name)} (staged as '_{name}')") for name in types),
        _Column(MALFORMED_REASON, f"parse_events' column {MALFORMED_REASON!r}"),
    ]
    _require_unambiguous(staged, [*KAFKA_COLUMNS, *(f"_{name}" for name in types)])
    parsed = [
        *kafka,
        *(_Column(name, field_role(name)) for name in types),
        _Column(MALFORMED_REASON, f"parse_events' column {MALFORMED_REASON!r}"),
    ]
    # valid_events selects the fields, then event_time wherever the time field was declared.
    # It passes on no column named like a Kafka column, "headers" included: an event field
    # named "headers" is dropped there.
    dropped = {*KAFKA_COLUMNS, "headers", EVENT_TIME, MALFORMED_REASON}
    selected = [*(name for name in types if name not in dropped), EVENT_TIME, *KAFKA_POSITION]
    _require_unambiguous(parsed, [MALFORMED_REASON, *selected])
    return [(name, types.get(name) or _KAFKA_TYPES[name]) for name in selected]


def output_schema(
    events: Sequence[EventField],
    *,
    time_source: str,
    time_field: str,
    keys: Sequence[str],
    metrics: Sequence[MetricSpec],
) -> list[tuple[str, str]]:
    """(name, simpleString type) of each output column, as Spark derives them
    returns them for the valid events of ``schema``; raises :class:`InvalidValueError` where
    building them with Spark raises.

    Stricter than Spark in one way: a metric name must be a plain identifier, as
    ``validation.parse_metric`` makes every name.
    """
    columns = dict(event_columns(events, time_source=time_source, time_field=time_field))
    check_columns(list(columns), keys, metrics)
    if not metrics:
        # Spark's own refusal here is an AssertionError from DataFrame.agg.
        raise InvalidValueError("at least one metric is required", field="metrics")
    for metric in metrics:
        try:
            check_identifier(metric.name, "metric name")
        except InvalidValueError as error:
            raise InvalidValueError(str(error), field="metrics") from None

    # windowed_aggregates selects the window, the keys and the metrics' other inputs, groups
    # by window and keys, aggregates, then selects by name: each step resolves names.
    window = _Column(_WINDOW, f"the window column {_WINDOW!r}")
    keyed = [window, *(_Column(key, f"grouping key {key!r}") for key in keys)]
    inputs = [metric.column for metric in metrics if metric.column != "*"]
    framed = [
        *keyed,
        *(
            _Column(name, f"metric input column {name!r}")
            for name in dict.fromkeys(inputs)
            if name not in keys
        ),
    ]
    _require_unambiguous(framed, [_WINDOW, *keys, *inputs])
    outputs = [(metric.name, _metric_type(metric, columns)) for metric in metrics]
    aggregated = [
        *keyed,
        *(
            _Column(metric.name, f"metric {metric.name} = {metric.expression}")
            for metric in metrics
        ),
    ]
    _require_unambiguous(aggregated, [_WINDOW, *keys, *(metric.name for metric in metrics)])
    return [
        (WINDOW_START, _WINDOW_BOUND_TYPE),
        (WINDOW_END, _WINDOW_BOUND_TYPE),
        *((key, columns[key]) for key in keys),
        *outputs,
    ]


def _metric_type(metric: MetricSpec, columns: Mapping[str, str]) -> str:
    input_type = _STAR_TYPE if metric.column == "*" else columns[metric.column]
    output = AGGREGATE_TYPES.get((metric.function, input_type))
    if output is None:
        takes = _TAKES.get(metric.function, f"no {input_type} column")
        raise InvalidAggregateTypeError(
            f"metric {metric.name} = {metric.expression}: {metric.function} takes {takes}; "
            f"{metric.column} is {input_type}",
            field="metrics",
        )
    return output


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    # How a refusal names it to the user.
    role: str


def _require_unambiguous(columns: Sequence[_Column], references: Iterable[str]) -> None:
    """Refuse as Spark's analyzer does when a name resolves to more than one column."""
    for reference in references:
        # Case-insensitive, as spark.sql.caseSensitive=false resolves. Every name here is
        # ASCII (check_identifier, or an exact match with one), where Java's
        # equalsIgnoreCase and str.lower agree.
        matches = [column for column in columns if column.name.lower() == reference.lower()]
        if len(matches) > 1:
            roles = " and ".join(dict.fromkeys(column.role for column in matches))
            raise AmbiguousColumnError(
                f"{roles} would both answer to the column name {reference!r}, and Spark "
                "compares column names case-insensitively; rename one"
            )
