"""JSON text parsed with the caller's one-line error when it is no JSON, or no object."""

from __future__ import annotations

import json

import pytest

from pyspark_kafka_upgrade._domain.values.json_text import json_object, json_value


class Refused(Exception):
    pass


def _where(error: json.JSONDecodeError) -> Refused:
    return Refused(f"broken: {error.msg} at {error.pos}")


def test_json_text_is_parsed() -> None:
    assert json_value("[1, 2]", _where) == [1, 2]
    assert json_object('{"a": 1}', _where, lambda: Refused("other")) == {"a": 1}


def test_text_that_is_no_json_raises_the_callers_error_without_the_decoders() -> None:
    with pytest.raises(Refused) as caught:
        json_value('{"a":', _where)
    assert str(caught.value) == "broken: Expecting value at 5"
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_json_of_another_kind_than_an_object_raises_the_other_error() -> None:
    with pytest.raises(Refused) as caught:
        json_object("[1]", _where, lambda: Refused("an array"))
    assert str(caught.value) == "an array"
