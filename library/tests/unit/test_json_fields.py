"""Typed reads of a document's fields: an enum's member, and a part read as a document of its
own kind, each refused with the field's path and the document's error."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

import pytest

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.values.json_fields import JsonFields


class ReportError(PipelineError):
    pass


class Shade(StrEnum):
    LIGHT = "light"
    DARK = "dark"


def refusal(read: Callable[[], object]) -> str:
    with pytest.raises(ReportError) as refused:
        read()
    return str(refused.value)


REPORT = JsonFields(
    {"shade": "light", "part": {"shade": "dim"}, "parts": [{"shade": 1}], "loose": [{}, 2]},
    "report",
    ReportError,
)


def test_a_member_is_read_by_its_value() -> None:
    assert REPORT.member("shade", Shade) is Shade.LIGHT


def test_an_unknown_member_is_refused_naming_the_ones_known() -> None:
    assert refusal(lambda: REPORT.child("part").member("shade", Shade)) == (
        "report field 'part.shade' is 'dim', expected one of light, dark"
    )


def test_a_field_may_word_the_refusal_of_an_unknown_member() -> None:
    unknown = "{what} shade {value!r} at {path} is none of {allowed}"

    assert refusal(lambda: REPORT.child("part").member("shade", Shade, unknown)) == (
        "report shade 'dim' at part.shade is none of light, dark"
    )


def test_a_member_must_be_named_by_a_string() -> None:
    assert refusal(lambda: REPORT.children("parts")[0].member("shade", Shade)) == (
        "report field 'parts[0].shade' must be a string, got int"
    )


def test_a_part_of_its_own_kind_is_named_so_at_its_path_with_the_documents_error() -> None:
    part = REPORT.child("part", "panel")

    assert refusal(lambda: part.member("shade", Shade)).startswith(
        "panel field 'part.shade' is 'dim'"
    )
    assert refusal(lambda: REPORT.children("loose", "panel")) == (
        "panel loose[1] must be a JSON object"
    )
