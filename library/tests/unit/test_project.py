"""What a project declares: its event fields are refused where they are declared.

A name that is no plain column name, or a type the parser does not read, never reaches
``parse_events``, its pure mirror ``EventParser`` or ``aggregate_types``: all three take
``EventField`` values, which refuse them when built.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import cast

import pytest

from pyspark_kafka_upgrade._domain.values.project import (
    EVENT_TYPES,
    EventField,
    EventType,
    Project,
)
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


# The query module: given as a module, checked at once; by name, found without being run
# and checked when a command imports it.


def _project(query: object) -> Project:
    return Project(
        command="views",
        version="1.0",
        defaults="",
        events=(EventField("id", "string"),),
        query=cast("ModuleType | str", query),
    )


def _module(tmp_path: Path, name: str, source: str) -> str:
    (tmp_path / f"{name}.py").write_text(source)
    return name


def test_a_query_module_given_by_name_is_not_imported_until_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = _module(
        tmp_path,
        "named_query_a",
        "IMPORTED = True\n"
        "def windowed_aggregates(raw, recipe): return raw\n"
        "def malformed_records(raw, recipe): return raw\n",
    )
    project = _project(name)
    assert project.query_name == name and name not in sys.modules
    assert project.query_module().IMPORTED is True


def test_a_query_module_that_is_not_there_is_refused_when_the_project_is_built() -> None:
    with pytest.raises(
        InvalidValueError, match=r"the query module views\.no_such_query is not found"
    ):
        _project("views.no_such_query")


def test_a_named_query_module_without_its_functions_is_refused_when_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    project = _project(_module(tmp_path, "named_query_b", "def windowed_aggregates(r, q): ...\n"))
    with pytest.raises(InvalidValueError, match=r"defines no malformed_records\(raw, recipe\)"):
        project.query_module()


def test_a_query_module_given_as_a_module_is_checked_at_once() -> None:
    with pytest.raises(InvalidValueError, match=r"the query module typing defines no windowed"):
        _project(typing)
