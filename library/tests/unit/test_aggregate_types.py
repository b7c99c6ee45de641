"""aggregate_types against Spark: the whole table, every refusal, and the naming rules.

Spark's answer is taken the way app/signature.py takes it: ``windowed_aggregates`` planned
over ``valid_events(parse_events(...))`` of an empty frame of Kafka rows. Only the analyzer
runs (``.schema`` starts no job), so each answer costs milliseconds.

The two agree when they give the same (name, type) list, or when both refuse; where the
Spark path refuses through the pipeline's own checks (an InvalidValueError), the table must
refuse with the same class and message.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from pyspark_kafka_upgrade._adapters.kafka.schema import (
    spark_schema,
)
from pyspark_kafka_upgrade._adapters.spark import aggregation, parsing
from pyspark_kafka_upgrade._adapters.spark.parsing import (
    parse_events,
    valid_events,
)
from pyspark_kafka_upgrade._core.query import aggregate_types
from pyspark_kafka_upgrade._core.query.aggregate_types import (
    AGGREGATE_TYPES,
    INPUT_TYPES,
    AmbiguousColumnError,
    InvalidAggregateTypeError,
    event_columns,
    output_schema,
)
from pyspark_kafka_upgrade._core.query.columns import (
    KAFKA_COLUMNS,
    TimeSource,
)
from pyspark_kafka_upgrade._core.settings import (
    load_settings,
)
from pyspark_kafka_upgrade._domain.values.project import EventField, EventType
from pyspark_kafka_upgrade._domain.values.validation import (
    METRIC_FUNCTIONS,
    InvalidValueError,
    MetricSpec,
)
from pyspark_kafka_upgrade._example.events import EVENTS
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from support.frames import aggregate_schema

# Every type parse_events supports, so a type added there is covered here without an edit.
SUPPORTED_TYPES: list[EventType] = list(parsing.JSON_TYPES)
TIME_FIELD = "ts"
# One field per supported type, nullable and required, and the time field.
TYPE_EVENTS = (
    *(
        EventField(f"{t}_{'nullable' if n else 'required'}", t, required=not n)
        for t in SUPPORTED_TYPES
        for n in (True, False)
    ),
    EventField(TIME_FIELD, "timestamp", required=True),
)
# What valid_events yields for TYPE_EVENTS with the event time from the payload.
TYPE_COLUMNS = [
    *(field.name for field in TYPE_EVENTS if field.name != TIME_FIELD),
    "event_time",
    "topic",
    "partition",
    "offset",
]
TABLE = sorted(AGGREGATE_TYPES)
COUNT = MetricSpec("n", "count", "*")


@dataclass(frozen=True, slots=True)
class Refused:
    error: type[Exception]
    message: str


Answer = list[tuple[str, str]] | Refused


def ask_spark(build: Callable[[], list[tuple[str, str]]]) -> Answer:
    try:
        return build()
    # Spark refuses at analysis; the pipeline's checks with InvalidValueError; DataFrame.agg
    # with no expression at all with an AssertionError.
    except (AnalysisException, InvalidValueError, AssertionError) as error:
        return Refused(type(error), str(error))


def ask_table(build: Callable[[], list[tuple[str, str]]]) -> Answer:
    try:
        return build()
    except InvalidValueError as error:  # anything else is a bug, and fails the test
        return Refused(type(error), str(error))


def disagreement(spark: Answer, table: Answer) -> str | None:
    """How the two answers differ, or None when they agree."""
    if isinstance(table, Refused) and "\n" in table.message:
        return f"the table's refusal is not one line: {table.message!r}"
    if isinstance(spark, Refused):
        if not isinstance(table, Refused):
            first = spark.message.splitlines()[0]
            return f"Spark refuses ({spark.error.__name__}: {first}); the table answers {table}"
        if issubclass(spark.error, InvalidValueError) and table != spark:
            return f"both refuse, but the pipeline's own check said {spark}; the table {table}"
        return None
    if isinstance(table, Refused):
        return f"Spark answers {spark}; the table refuses: {table.message}"
    return None if table == spark else f"Spark answers {spark}; the table {table}"


class SparkPath:
    """The Spark side, as app/signature.py builds it, with each events frame built once."""

    def __init__(self, spark: SparkSession) -> None:
        # As app/signature.py builds it: no headers column.
        self._raw = spark.createDataFrame([], spark_schema(include_headers=False))
        self._events: dict[tuple[tuple[EventField, ...], str, str], DataFrame] = {}

    def events(self, events: Sequence[EventField], time_source: str, time_field: str) -> DataFrame:
        """valid_events(parse_events(...)); raises as they do, and then nothing is kept."""
        key = (tuple(events), time_source, time_field)
        if key not in self._events:
            parsed = parse_events(
                self._raw,
                # Unchecked on purpose: the cases below pass wrong values too.
                time_source=cast(TimeSource, time_source),
                time_field=time_field,
                max_value_bytes=1024,
                events=events,
            )
            self._events[key] = valid_events(parsed)
        return self._events[key]


@pytest.fixture(scope="module")
def path(spark: SparkSession) -> SparkPath:
    return SparkPath(spark)


@dataclass(frozen=True, slots=True)
class Query:
    """One question put to both: the output schema of these events and this aggregation."""

    events: tuple[EventField, ...]
    keys: Sequence[str]
    metrics: Sequence[MetricSpec]
    time_source: str = "payload"
    time_field: str = TIME_FIELD

    def spark(self, path: SparkPath) -> Answer:
        return ask_spark(
            lambda: aggregate_schema(
                path.events(self.events, self.time_source, self.time_field),
                self.keys,
                self.metrics,
            )
        )

    def spark_events(self, path: SparkPath) -> Answer:
        return ask_spark(
            lambda: [
                (field.name, field.dataType.simpleString())
                for field in path.events(self.events, self.time_source, self.time_field).schema
            ]
        )

    def table_events(self) -> Answer:
        return ask_table(
            lambda: event_columns(
                self.events, time_source=self.time_source, time_field=self.time_field
            )
        )

    def table(self) -> Answer:
        return ask_table(
            lambda: output_schema(
                self.events,
                time_source=self.time_source,
                time_field=self.time_field,
                keys=self.keys,
                metrics=self.metrics,
            )
        )


class TypeSchemaAnswers:
    """Spark's answers over TYPE_EVENTS' events, each asked once for the whole module."""

    def __init__(self, path: SparkPath) -> None:
        self.events = path.events(TYPE_EVENTS, "payload", TIME_FIELD)
        self._answers: dict[tuple[str, str], Answer] = {}

    def columns_of(self, input_type: str) -> list[str]:
        """The events' columns of this type, as Spark types them; "*" counts as an int."""
        columns = [
            f.name for f in self.events.schema.fields if f.dataType.simpleString() == input_type
        ]
        return [*columns, "*"] if input_type == "int" else columns

    def metric(self, function: str, column: str) -> Answer:
        key = (function, column)
        if key not in self._answers:
            metric = MetricSpec("m", function, column)
            self._answers[key] = ask_spark(lambda: aggregate_schema(self.events, [], [metric]))
        return self._answers[key]


@pytest.fixture(scope="module")
def answers(path: SparkPath) -> TypeSchemaAnswers:
    return TypeSchemaAnswers(path)


def table_metric(function: str, column: str) -> Answer:
    return Query(TYPE_EVENTS, keys=[], metrics=[MetricSpec("m", function, column)]).table()


def table_entry_disagreements(
    answers: TypeSchemaAnswers, function: str, input_type: str
) -> list[str]:
    return [
        f"{function}({column}): {problem}"
        for column in answers.columns_of(input_type)
        if (
            problem := disagreement(
                answers.metric(function, column), table_metric(function, column)
            )
        )
    ]


# -- The table ---------------------------------------------------------------------------


def test_the_table_has_a_row_per_function_and_a_column_per_supported_type() -> None:
    assert set(aggregation._METRIC_FUNCTIONS) == set(METRIC_FUNCTIONS)
    assert set(INPUT_TYPES) == set(SUPPORTED_TYPES)
    assert set(AGGREGATE_TYPES) == {(f, t) for f in METRIC_FUNCTIONS for t in INPUT_TYPES}


@pytest.mark.parametrize(("function", "input_type"), TABLE, ids=[f"{f}({t})" for f, t in TABLE])
def test_each_table_entry_is_what_spark_answers(
    answers: TypeSchemaAnswers, function: str, input_type: str
) -> None:
    columns = answers.columns_of(input_type)
    # The declared field, nullable and required, at least: else this entry went untested.
    assert {f"{input_type}_nullable", f"{input_type}_required"} <= set(columns)
    assert table_entry_disagreements(answers, function, input_type) == []


@pytest.mark.parametrize(("function", "input_type"), TABLE, ids=[f"{f}({t})" for f, t in TABLE])
def test_any_wrong_answer_in_an_entry_would_be_caught(
    answers: TypeSchemaAnswers, monkeypatch: pytest.MonkeyPatch, function: str, input_type: str
) -> None:
    right = AGGREGATE_TYPES[(function, input_type)]
    wrong_answers = [answer for answer in (None, *INPUT_TYPES) if answer != right]
    for wrong in wrong_answers:
        changed = {**AGGREGATE_TYPES, (function, input_type): wrong}
        monkeypatch.setattr(aggregate_types, "AGGREGATE_TYPES", changed)
        caught = table_entry_disagreements(answers, function, input_type)
        assert caught, f"{function}({input_type}) -> {wrong} instead of {right} went unnoticed"


@pytest.mark.parametrize("key", TYPE_COLUMNS)
def test_each_column_as_a_grouping_key(path: SparkPath, key: str) -> None:
    query = Query(TYPE_EVENTS, keys=[key], metrics=[COUNT])
    spark = query.spark(path)
    assert not isinstance(spark, Refused), spark  # every supported type can be a key
    assert disagreement(spark, query.table()) is None


def test_all_keys_and_metrics_at_once_keep_their_order(
    path: SparkPath, answers: TypeSchemaAnswers
) -> None:
    metrics = [
        MetricSpec(f"{function}_{column}", function, column)
        for function in METRIC_FUNCTIONS
        for column in reversed(TYPE_COLUMNS)
        if not isinstance(answers.metric(function, column), Refused)
    ]
    keys = TYPE_COLUMNS[::2]
    query = Query(TYPE_EVENTS, keys=keys, metrics=metrics)
    spark = query.spark(path)
    assert isinstance(spark, list) and len(spark) == 2 + len(keys) + len(metrics), spark
    assert disagreement(spark, query.table()) is None


# -- The events' columns -----------------------------------------------------------------


@pytest.mark.parametrize("time_source", ["payload", "kafka"])
@pytest.mark.parametrize("declared", [TYPE_EVENTS, EVENTS], ids=["types", "EVENTS"])
def test_event_columns_are_those_of_valid_events(
    path: SparkPath, declared: tuple[EventField, ...], time_source: str
) -> None:
    time_field = TIME_FIELD if declared is TYPE_EVENTS else "event_time"
    events = path.events(declared, time_source, time_field)
    spark = [(f.name, f.dataType.simpleString()) for f in events.schema.fields]
    assert {type_ for _, type_ in spark} <= set(INPUT_TYPES)  # else the table misses a type
    assert event_columns(declared, time_source=time_source, time_field=time_field) == spark
    if declared is TYPE_EVENTS and time_source == "payload":
        assert [name for name, _ in spark] == TYPE_COLUMNS


@pytest.mark.parametrize("time_source", ["payload", "kafka"])
def test_the_projects_events_with_the_default_aggregation(
    path: SparkPath, time_source: str
) -> None:
    settings = load_settings(PROJECT, env={}).settings
    query = Query(
        EVENTS,
        keys=settings.aggregation.keys,
        metrics=settings.aggregation.metric_specs,
        time_source=time_source,
        time_field=settings.events.time_field,
    )
    spark = query.spark(path)
    assert isinstance(spark, list), spark
    assert disagreement(spark, query.table()) is None


# -- Names and settings: refusals and their edges ----------------------------------------

A = EventField("a", "string")
TS = EventField(TIME_FIELD, "timestamp", required=True)


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    refused: bool  # what Spark does, so a case that stops testing its edge fails
    fields: tuple[EventField, ...] = (A, TS)
    keys: tuple[str, ...] = ()
    metrics: tuple[MetricSpec, ...] = (COUNT,)
    time_source: str = "payload"
    time_field: str = TIME_FIELD


def _field(name: str, type_: EventType = "string") -> EventField:
    return EventField(name, type_)


def _metric(name: str, function: str, column: str) -> MetricSpec:
    return MetricSpec(name, function, column)


CASES = [
    # transformations._check_columns, reached through the table too.
    Case("unknown key", True, keys=("nope",)),
    Case("key in another case", True, keys=("A",)),
    Case("unknown metric column", True, metrics=(_metric("n", "max", "nope"),)),
    Case("unknown function", True, metrics=(_metric("n", "median", "a"),)),
    Case("metric named like a key", True, keys=("a",), metrics=(_metric("a", "count", "*"),)),
    Case("metric named window_start", True, metrics=(_metric("window_start", "count", "*"),)),
    Case("repeated key", True, keys=("a", "a")),
    Case("no metric", True, metrics=()),
    # The window column and case-insensitive names in windowed_aggregates.
    Case("metric named window", True, metrics=(_metric("window", "count", "*"),)),
    Case("metric named Window", True, metrics=(_metric("Window", "count", "*"),)),
    Case("metric named WINDOW_START", False, metrics=(_metric("WINDOW_START", "count", "*"),)),
    Case("metric and key differ in case", True, keys=("a",), metrics=(_metric("A", "max", "a"),)),
    Case("metrics differ in case", True, metrics=(COUNT, _metric("N", "count", "*"))),
    Case("metric named like its input", False, metrics=(_metric("a", "max", "a"),)),
    Case("metric named like a Kafka column", False, metrics=(_metric("topic", "max", "a"),)),
    Case("key is also a metric input", False, keys=("a",), metrics=(_metric("n", "max", "a"),)),
    Case("field window unused", False, fields=(_field("window"), TS)),
    Case("field window as key", True, fields=(_field("window"), TS), keys=("window",)),
    Case(
        "field window as metric input",
        True,
        fields=(_field("window"), TS),
        metrics=(_metric("n", "max", "window"),),
    ),
    Case("field Window as key", True, fields=(_field("Window"), TS), keys=("Window",)),
    # Names parse_events and valid_events work with.
    *(Case(f"field {n}", True, fields=(_field(n), TS)) for n in KAFKA_COLUMNS),
    *(Case(f"field {n.upper()}", True, fields=(_field(n.upper()), TS)) for n in KAFKA_COLUMNS),
    Case(
        "field timestamp as the unread time field",
        False,
        fields=(A, _field("timestamp", "timestamp")),
        time_source="kafka",
        time_field="timestamp",
    ),
    Case("field headers", False, fields=(_field("headers"), TS)),
    Case("field headers as key", True, fields=(_field("headers"), TS), keys=("headers",)),
    Case("field Headers as key", False, fields=(_field("Headers"), TS), keys=("Headers",)),
    Case("field json", True, fields=(_field("json"), TS)),
    Case("field JSON", True, fields=(_field("JSON"), TS)),
    Case("field _json", False, fields=(_field("_json"), TS), keys=("_json",)),
    Case("field _a beside a", False, fields=(A, _field("_a"), TS), keys=("a", "_a")),
    Case("fields differ in case", True, fields=(A, _field("A"), TS)),
    Case("field malformed_reason", True, fields=(_field("malformed_reason"), TS)),
    Case("field Malformed_Reason", True, fields=(_field("Malformed_Reason"), TS)),
    Case("field Event_Time", True, fields=(_field("Event_Time"), TS)),
    Case(
        "field Event_Time, Kafka time", True, fields=(_field("Event_Time"), TS), time_source="kafka"
    ),
    Case(
        "field event_time, Kafka time", True, fields=(_field("event_time"), TS), time_source="kafka"
    ),
    Case(
        "field event_time as the unread time field",
        False,
        fields=(A, _field("event_time")),
        time_source="kafka",
        time_field="event_time",
    ),
    Case(
        "time field TS beside a field ts",
        False,
        fields=(_field("ts"), _field("TS", "timestamp")),
        time_field="TS",
        keys=("ts",),
    ),
    Case(
        "repeated field name: first place, last type",
        False,
        fields=(A, TS, _field("a", "int")),
        keys=("a",),
        metrics=(_metric("total", "sum", "a"),),
    ),
    Case(
        "time field between fields",
        False,
        fields=(A, TS, _field("b", "boolean")),
        keys=("b", "event_time", "a"),
        metrics=(_metric("first", "min", "event_time"),),
    ),
    Case(
        "Kafka time and position",
        False,
        fields=(A, TS, _field("b", "boolean")),
        time_source="kafka",
        keys=("topic", "partition", "b"),
        metrics=(_metric("last", "max", "offset"), _metric("first", "min", "event_time")),
    ),
    Case("Kafka time, time field absent", False, fields=(A,), time_source="kafka", keys=("a",)),
    # Settings and schemas payload_fields refuses.
    Case("unknown time source", True, time_source="clock"),
    Case("time field absent", True, time_field="when"),
    Case("time field not a timestamp", True, time_field="a"),
    # An unsupported type or a name that is no identifier is refused where the field is
    # declared, before either side sees it: see test_project.py.
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_names_and_settings_as_spark_takes_them(path: SparkPath, case: Case) -> None:
    query = Query(
        case.fields,
        keys=case.keys,
        metrics=case.metrics,
        time_source=case.time_source,
        time_field=case.time_field,
    )
    spark = query.spark(path)
    assert isinstance(spark, Refused) == case.refused, spark
    assert disagreement(spark, query.table()) is None
    # The events alone too: a case may pass above only because its keys hide their order.
    assert disagreement(query.spark_events(path), query.table_events()) is None


# -- Without Spark -----------------------------------------------------------------------


def test_a_refused_type_names_the_metric_in_one_line() -> None:
    events = (_field("flag", "boolean"), TS)
    with pytest.raises(InvalidAggregateTypeError) as raised:
        output_schema(
            events,
            time_source="payload",
            time_field=TIME_FIELD,
            keys=[],
            metrics=[MetricSpec("total", "sum", "flag")],
        )
    assert str(raised.value) == (
        "metric total = sum(flag): sum takes a numeric column (or a string or timestamp, "
        "which Spark casts to double); flag is boolean"
    )
    assert raised.value.field == "metrics"


def test_a_name_differing_only_in_case_names_both_columns() -> None:
    with pytest.raises(AmbiguousColumnError) as raised:
        event_columns((_field("Topic"), TS), time_source="payload", time_field="ts")
    assert str(raised.value) == (
        "the Kafka column 'topic' and event field 'Topic' would both answer to the column name "
        "'Topic', and Spark compares column names case-insensitively; rename one"
    )


def test_a_metric_name_must_be_a_plain_identifier() -> None:
    # Stricter than Spark, which takes "a b" (not "a.b"): parse_metric makes no other names.
    with pytest.raises(InvalidValueError, match="must be a plain column name"):
        output_schema(
            (A, TS),
            time_source="payload",
            time_field=TIME_FIELD,
            keys=[],
            metrics=[MetricSpec("a b", "count", "*")],
        )


def test_output_schema_starts_no_jvm() -> None:
    code = textwrap.dedent(
        """
        from pyspark import SparkContext
        from pyspark_kafka_upgrade._example.events import EVENTS
        from pyspark_kafka_upgrade._core.query.aggregate_types import output_schema
        from pyspark_kafka_upgrade._domain.values.validation import MetricSpec

        print(output_schema(EVENTS, time_source="payload", time_field="event_time",
                            keys=["article_id"], metrics=[MetricSpec("views", "count", "*")]))
        assert SparkContext._gateway is None and SparkContext._jvm is None
        """
    )
    # No Java to be found: a JVM it tried to start would fail the run.
    env = {
        **os.environ,
        "JAVA_HOME": "/nonexistent",
        "PYTHONPATH": os.pathsep.join(path for path in sys.path if path),
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "[('window_start', 'timestamp'), ('window_end', 'timestamp'), "
        "('article_id', 'string'), ('views', 'bigint')]"
    )
