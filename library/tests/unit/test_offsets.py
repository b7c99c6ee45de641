import pytest

from pyspark_kafka_upgrade._domain.values.offsets import (
    InvalidOffsetsError,
    flatten,
    format_offsets,
    is_at_or_before,
    min_offsets,
    offsets_to_json_object,
    parse_offsets,
    unflatten,
)


def test_format_is_the_built_in_sources_canonical_form() -> None:
    offsets = {"views": {10: 7, 2: 5, 0: 1}, "clicks": {0: 3}}
    assert format_offsets(offsets) == '{"clicks":{"0":3},"views":{"0":1,"2":5,"10":7}}'


def test_json_object_keeps_the_canonical_order_for_json_dumps() -> None:
    json_object = offsets_to_json_object({"b": {1: 0, 0: 9}, "a": {3: 1}})
    assert list(json_object) == ["a", "b"]
    assert list(json_object["b"]) == ["0", "1"]


@pytest.mark.parametrize(
    "text",
    [
        '{"views":{"0":1,"2":5,"10":7}}',
        '{"views": {"10": 7, "0": 1, "2": 5}}',  # Python's json.dumps spacing and any order
    ],
)
def test_parse_accepts_any_spacing_and_order(text: str) -> None:
    assert parse_offsets(text) == {"views": {0: 1, 2: 5, 10: 7}}
    assert format_offsets(parse_offsets(text)) == '{"views":{"0":1,"2":5,"10":7}}'


def test_parse_keeps_the_special_starting_offsets() -> None:
    assert parse_offsets('{"t":{"0":-2,"1":-1}}') == {"t": {0: -2, 1: -1}}


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('{"t":{"0":1}', "startingOffsets is not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"t":[1]}', "topic 't' must map partitions to offsets"),
        ('{"t":{"x":1}}', "partitions must be non-negative integers"),
        ('{"t":{"-1":1}}', "partitions must be non-negative integers"),
        ('{"t":{"0":"5"}}', "offsets integers"),
        ('{"t":{"0":1.5}}', "offsets integers"),
        ('{"t":{"0":true}}', "offsets integers"),
    ],
)
def test_parse_names_what_is_wrong(text: str, complaint: str) -> None:
    with pytest.raises(InvalidOffsetsError, match=complaint):
        parse_offsets(text, what="startingOffsets")


def test_flatten_and_unflatten_round_trip_in_canonical_order() -> None:
    offsets = {"b": {1: 4, 0: 3}, "a": {0: 1}}
    flat = flatten(offsets)
    assert list(flat) == [("a", 0), ("b", 0), ("b", 1)]
    assert unflatten(flat) == offsets
    assert list(unflatten({("b", 1): 4, ("a", 0): 1})) == ["a", "b"]


def test_min_offsets_takes_each_partition_from_the_inputs_that_have_it() -> None:
    checkpoint = {"t": {0: 10, 1: 20}}
    ledger = {"t": {0: 12, 1: 15, 2: 3}}
    assert min_offsets([checkpoint, ledger]) == {"t": {0: 10, 1: 15, 2: 3}}
    assert min_offsets([]) == {}


def test_is_at_or_before_needs_every_partition_at_or_after() -> None:
    assert is_at_or_before({"t": {0: 1}}, {"t": {0: 1, 1: 0}})
    assert not is_at_or_before({"t": {0: 2}}, {"t": {0: 1}})
    assert not is_at_or_before({"t": {0: 1, 1: 0}}, {"t": {0: 1}})
