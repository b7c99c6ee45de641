"""The one mechanism records write and read their JSON with: each way a shape can lay a record
out, written and read back, and each refusal in the words ``JsonFields`` uses everywhere."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import pytest

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.values.json_fields import JsonFields
from pyspark_kafka_upgrade._domain.values.json_record import (
    Field,
    Fields,
    FormatVersion,
    Group,
    JsonRecord,
    Shape,
    Spread,
    Written,
    decode,
    encode,
    read_record,
)


class BoxError(PipelineError):
    pass


class NewerBoxError(BoxError):
    pass


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True, slots=True)
class Label:
    text: str
    size: int | None


@dataclass(frozen=True, slots=True)
class Sticker(JsonRecord):
    """A part that names itself: read under its own name, failing as its document does."""

    json_shape = Shape("colour", what="sticker", error=BoxError)

    colour: Colour


@dataclass(frozen=True, slots=True)
class Box(JsonRecord):
    """Every kind of field a shape reads by its type alone."""

    json_shape = Shape(what="box", error=BoxError)

    name: str
    count: int
    sealed: bool
    note: str | None
    contents: object
    colour: Colour
    label: Label
    spare: Label | None
    tags: tuple[str, ...]
    labels: tuple[Label, ...]
    extra: Mapping[str, object]
    stickers: tuple[Sticker, ...] = ()


def refusal(read: Callable[[], object]) -> str:
    """The one line a document is refused with."""
    with pytest.raises(BoxError) as refused:
        read()
    return str(refused.value)


def box(**changes: Any) -> Box:
    fields: dict[str, Any] = {
        "name": "b",
        "count": 3,
        "sealed": False,
        "note": None,
        "contents": [1, {"a": None}],
        "colour": Colour.RED,
        "label": Label("fragile", 12),
        "spare": None,
        "tags": ("x", "y"),
        "labels": (Label("a", None),),
        "extra": {"k": [1, 2]},
        "stickers": (Sticker(Colour.BLUE),),
    }
    return Box(**{**fields, **changes})


def test_a_record_without_a_layout_is_its_fields_in_order_each_as_json_holds_it() -> None:
    assert json.dumps(box().to_json()) == json.dumps(
        {
            "name": "b",
            "count": 3,
            "sealed": False,
            "note": None,
            "contents": [1, {"a": None}],
            "colour": "red",
            "label": {"text": "fragile", "size": 12},
            "spare": None,
            "tags": ["x", "y"],
            "labels": [{"text": "a", "size": None}],
            "extra": {"k": [1, 2]},
            "stickers": [{"colour": "blue"}],
        }
    )


def test_a_record_reads_back_from_its_json_text() -> None:
    made = box(note="n", spare=Label("s", None))

    assert Box.from_json(json.loads(json.dumps(made.to_json()))) == made


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("count"), "box has no field 'count'"),
        (lambda d: d.update(count=True), "box field 'count' must be an integer, got bool"),
        (lambda d: d.update(sealed=1), "box field 'sealed' must be true or false, got int"),
        (lambda d: d.update(note=2), "box field 'note' must be a string, got int"),
        (
            lambda d: d.update(colour="green"),
            "box field 'colour' is 'green', expected one of red, blue",
        ),
        (lambda d: d.update(label=[]), "box label must be a JSON object"),
        (lambda d: d["label"].pop("size"), "box has no field 'label.size'"),
        (lambda d: d.update(tags=[1]), "box field 'tags' must list strings"),
        (lambda d: d.update(labels={}), "box field 'labels' must be a list, got dict"),
        (lambda d: d["labels"][0].update(text=0), "box field 'labels[0].text' must be a string"),
        (lambda d: d.update(extra=[]), "box field 'extra' must be a JSON object, got list"),
        # A part with a name of its own says it, at its path, with the box's error.
        (lambda d: d.update(stickers=[1]), "sticker stickers[0] must be a JSON object"),
        (
            lambda d: d["stickers"][0].update(colour="x"),
            "sticker field 'stickers[0].colour' is 'x', expected one of red, blue",
        ),
    ],
)
def test_a_bad_field_is_refused_with_its_path_and_the_documents_error(
    change: Callable[[Any], object], message: str
) -> None:
    document = json.loads(json.dumps(box().to_json()))
    change(document)

    with pytest.raises(BoxError) as refused:
        Box.from_json(document)

    assert str(refused.value).startswith(message)


def test_a_document_that_is_no_object_is_refused_by_its_name() -> None:
    assert refusal(lambda: Box.from_json([])) == "box document must be a JSON object"


def test_a_part_read_on_its_own_fails_as_its_own_document() -> None:
    assert refusal(lambda: Sticker.from_json({"colour": "x"})) == (
        "sticker field 'colour' is 'x', expected one of red, blue"
    )


def test_a_record_its_shape_does_not_name_is_read_only_inside_another() -> None:
    with pytest.raises(TypeError, match="Label is read only as part of a document"):
        decode(Label, {"text": "t", "size": 1})


@dataclass(frozen=True, slots=True)
class Shipment(JsonRecord):
    """A laid-out document: renamed, computed, grouped, spread, versioned, given."""

    json_shape = Shape(
        FormatVersion(
            2,
            newer="shipment format {version} is newer than {current}",
            older="shipment format {version} does not exist",
            newer_error=NewerBoxError,
        ),
        Spread("place", "town", "street"),
        Field("weight_g", key="weight"),
        Written("kilos", lambda shipment: shipment.weight_g / 1000),
        Written("heavy"),
        Group("sender", Field("sender_name", key="name"), "sender_phone"),
        Group("customs", "declared", optional=True),
        Field("colour", unknown="{what} colour {value!r} is not one this version knows"),
        Field("insured", absent=False),
        what="shipment",
        error=BoxError,
    )

    place: tuple[str, int]
    weight_g: int
    sender_name: str
    sender_phone: str | None
    colour: Colour
    declared: int | None = None
    insured: bool = False
    courier: str = "nobody"  # not in the document: given by whoever reads it
    format_version: int = 2

    @property
    def heavy(self) -> bool:
        return self.weight_g > 5000


SHIPMENT = Shipment(("Leeds", 4), 7500, "Ann", None, Colour.BLUE, declared=30, insured=True)


def test_a_laid_out_record_writes_its_keys_in_the_shapes_order() -> None:
    assert json.dumps(SHIPMENT.to_json()) == json.dumps(
        {
            "format_version": 2,
            "town": "Leeds",
            "street": 4,
            "weight": 7500,
            "kilos": 7.5,
            "heavy": True,
            "sender": {"name": "Ann", "sender_phone": None},
            "customs": {"declared": 30},
            "colour": "blue",
            "insured": True,
        }
    )


def test_computed_keys_are_not_read_back_and_fields_left_out_are_given() -> None:
    document = {**SHIPMENT.to_json(), "kilos": 99, "heavy": False}

    assert Shipment.from_json(document) == SHIPMENT
    assert decode(Shipment, document, courier="Bo") == replace(SHIPMENT, courier="Bo")


def test_an_optional_group_is_left_out_while_empty_and_read_as_none_when_absent() -> None:
    undeclared = replace(SHIPMENT, declared=None)
    document = undeclared.to_json()

    assert "customs" not in document
    assert Shipment.from_json(document) == undeclared


def test_a_present_optional_group_holds_its_members() -> None:
    document = {**SHIPMENT.to_json(), "customs": {"declared": None}}

    assert refusal(lambda: Shipment.from_json(document)) == (
        "shipment field 'customs.declared' must be an integer, got NoneType"
    )


def test_a_key_added_within_a_version_reads_as_its_absent_value() -> None:
    document = SHIPMENT.to_json()
    del document["insured"]

    assert Shipment.from_json(document).insured is False


def test_an_enum_field_may_word_its_own_refusal() -> None:
    document = {**SHIPMENT.to_json(), "colour": "green"}

    assert refusal(lambda: Shipment.from_json(document)) == (
        "shipment colour 'green' is not one this version knows"
    )


@pytest.mark.parametrize(
    ("version", "error", "message"),
    [
        (3, NewerBoxError, "shipment format 3 is newer than 2"),
        (0, BoxError, "shipment format 0 does not exist"),
    ],
)
def test_a_version_this_one_cannot_read_is_refused_before_any_field(
    version: int, error: type[BoxError], message: str
) -> None:
    # A newer document may have changed any key: it is refused for its version alone.
    document = {"format_version": version, "weight": "heavy"}

    with pytest.raises(error) as refused:
        Shipment.from_json(document)

    assert str(refused.value) == message and type(refused.value) is error


def test_the_version_read_is_kept_and_a_missing_one_is_named() -> None:
    older = Shipment.from_json({**SHIPMENT.to_json(), "format_version": 1})

    assert older.format_version == 1
    assert older.to_json()["format_version"] == 1
    assert refusal(lambda: Shipment.from_json({"town": "Leeds"})) == (
        "shipment has no field 'format_version'"
    )


@dataclass(frozen=True, slots=True)
class Note(JsonRecord):
    """A record that keeps no version writes the one this version writes; a document
    without one is of the version ``absent`` says."""

    json_shape = Shape(
        FormatVersion(3, newer="note {version} is newer than {current}", absent=1),
        "text",
        what="note",
        error=BoxError,
    )

    text: str


def test_a_record_without_a_version_field_writes_the_current_one() -> None:
    assert Note("hi").to_json() == {"format_version": 3, "text": "hi"}
    assert Note.from_json({"text": "hi"}) == Note("hi")
    assert refusal(lambda: Note.from_json({"format_version": 4, "text": "hi"})) == (
        "note 4 is newer than 3"
    )


@dataclass(frozen=True, slots=True)
class Parcel(JsonRecord):
    """A document that is its fields but where it says otherwise: the partition's two keys
    first, a version and a renamed field in their own places, a computed key last."""

    json_shape = Shape(
        Spread("place", "town", "street"),
        Fields(
            Field("weight_g", key="weight"),
            FormatVersion(2, newer="parcel format {version} is newer than {current}"),
        ),
        Written("heavy"),
        what="parcel",
        error=BoxError,
    )

    weight_g: int
    place: tuple[str, int]
    format_version: int
    colour: Colour
    label: Label | None = None

    @property
    def heavy(self) -> bool:
        return self.weight_g > 5000


def test_fields_stands_for_the_fields_no_other_entry_names_in_their_order() -> None:
    parcel = Parcel(7500, ("Leeds", 4), 2, Colour.RED)

    assert json.dumps(parcel.to_json()) == json.dumps(
        {
            "town": "Leeds",
            "street": 4,
            "weight": 7500,
            "format_version": 2,
            "colour": "red",
            "label": None,
            "heavy": True,
        }
    )
    assert Parcel.from_json(parcel.to_json()) == parcel
    assert refusal(lambda: Parcel.from_json({**parcel.to_json(), "format_version": 3})) == (
        "parcel format 3 is newer than 2"
    )


def test_a_shape_has_one_fields_and_it_lays_out_only_what_no_other_entry_names() -> None:
    with pytest.raises(TypeError, match="one Fields at the most"):
        Shape(Fields(), "name", Fields())
    with pytest.raises(TypeError, match=r"Fields lays out \['name'\], which another entry"):
        Shape(Field("name", key="title"), Fields(Field("name", absent="")))
    with pytest.raises(TypeError, match="Fields lays a field out once"):
        Fields(Field("name"), Field("name", key="title"))


def test_fields_laying_out_a_field_the_record_lacks_fails_at_its_first_use() -> None:
    @dataclass(frozen=True, slots=True)
    class Typo:
        json_shape = Shape(Fields(Field("nmae", key="title")))

        name: str

    with pytest.raises(TypeError, match=r"Typo has no fields \['nmae'\] for Fields"):
        encode(Typo("x"))


def test_a_field_may_write_and_read_its_own_way() -> None:
    @dataclass(frozen=True, slots=True)
    class Level:
        json_shape = Shape(
            Field("value", write=lambda value: f"level {value}", read=lambda read, key: len(key)),
        )

        value: int

    assert encode(Level(4)) == {"value": "level 4"}
    assert read_record(Level, JsonFields({"value": "x"}, "level", BoxError)) == Level(5)


def test_a_shape_naming_a_field_the_record_lacks_fails_at_its_first_use() -> None:
    @dataclass(frozen=True, slots=True)
    class Typo:
        json_shape = Shape("nmae")

        name: str

    with pytest.raises(TypeError, match=r"Typo has no fields \['nmae'\]"):
        encode(Typo("x"))


def test_a_field_of_a_type_without_a_reading_says_so() -> None:
    @dataclass(frozen=True, slots=True)
    class Odd:
        when: float

    with pytest.raises(TypeError, match="no JSON reading of <class 'float'>"):
        read_record(Odd, JsonFields({"when": 1.5}, "odd", BoxError))
