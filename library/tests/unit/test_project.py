"""What a project declares: its event fields are refused where they are declared.

A name that is no plain column name, or a type the parser does not read, never reaches
``parse_events``, its pure mirror ``EventParser`` or ``aggregate_types``: all three take
``EventField`` values, which refuse them when built.
"""

from __future__ import annotations

from typing import cast

import pytest

from pyspark_kafka_upgrade._domain.values.project import EVENT_TYPES, EventField, EventType
from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError

USE = "use string, boolean, int, bigint, double, timestamp"


@pytest.mark.parametrize("type_", EVENT_TYPES)
def test_each_supported_type_is_declared(type_: EventType) -> None:
    assert EventField("f", type_, required=True).type == type_


@pytest.mark.parametrize(
    ("name", "type_"),
    [
        # Was test_transformations' parse_events refusal of a map field.
        ("tags", "map<string,string>"),
        # Was test_aggregate_types' "unsupported field type" case.
        ("t", "timestamp_ntz"),
        # Was test_event_parser's refusal of a struct field, by parse_events and the mirror.
        ("m", "struct<>"),
    ],
)
def test_an_unsupported_type_is_refused_where_it_is_declared(name: str, type_: str) -> None:
    with pytest.raises(InvalidValueError) as caught:
        EventField(name, cast(EventType, type_))
    assert type(caught.value) is InvalidValueError
    assert str(caught.value) == f"event field {name!r} has type {type_!r}; {USE}"


# Was test_aggregate_types' "field name not an identifier" case ("a-b") and
# test_event_parser's refusal of "bad-name", by parse_events and the mirror.
@pytest.mark.parametrize("name", ["a-b", "bad-name"])
def test_a_name_that_is_no_identifier_is_refused_where_it_is_declared(name: str) -> None:
    with pytest.raises(InvalidValueError) as caught:
        EventField(name, "string")
    assert type(caught.value) is InvalidValueError
    assert str(caught.value) == (
        f"event field {name!r} must be a plain column name: ASCII letters, digits and "
        "underscores, not starting with a digit"
    )
