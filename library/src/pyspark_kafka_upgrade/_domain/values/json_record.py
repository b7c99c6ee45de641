"""One mechanism for every typed record's JSON: written from its fields, read back by their types.

A record's document is its dataclass fields in order, each under its own name, unless the
record lays it out otherwise in ``json_shape``: a key that is not the field's name, a key
computed and never read back (:class:`Written`), a field left to the reader to give, an
object grouping fields (:class:`Group`), a pair spread over two keys (:class:`Spread`), the
format version the document states (:class:`FormatVersion`); :class:`Fields` stands for the
fields it does not lay out otherwise, in their order. Values are written by what they are
(an enum as its value, a tuple as a list, a mapping as an object, a dataclass as its own
document) and read by the field's type hint through :class:`JsonFields`, so a bad document
fails with the field's path and the error of its own kind, in one set of words.

Standard library only, not msgspec or cattrs: the records live in the pure core, which loads
without dependencies, and the documents' keys, order and refusals are fixed by files already
written, which those libraries would each spell their own way.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar, Self, TypeVar, cast

from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.values.json_fields import UNKNOWN_MEMBER, JsonFields

_Record = TypeVar("_Record")

_REQUIRED: Any = object()  # a Field's ``absent`` when a document must have the key

# The record's type hints by field name, resolved once.
_Hints = Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Field:
    """A field whose key, absence, refusal or reading is its own."""

    name: str
    _: KW_ONLY
    key: str = ""  # the document's key, when not the field's name
    # What a document without the key holds (a key added within a format version); by
    # default a document must have it.
    absent: object = _REQUIRED
    unknown: str = UNKNOWN_MEMBER  # the refusal of an enum value (see ``JsonFields.member``)
    # The field's own way to write and read its value, for the few odd fields.
    write: Callable[[Any], object] | None = None
    read: Callable[[JsonFields, str], object] | None = None

    def put(self, record: object, document: dict[str, object]) -> None:
        value = getattr(record, self.name)
        document[self.key or self.name] = _write(value) if self.write is None else self.write(value)

    def take(self, read: JsonFields, hints: _Hints, values: dict[str, object]) -> None:
        key = self.key or self.name
        if self.name in values:
            return
        if self.absent is not _REQUIRED and not read.has(key):
            values[self.name] = self.absent
        elif self.read is not None:
            values[self.name] = self.read(read, key)
        else:
            values[self.name] = _read(hints[self.name], read, key, self.unknown)


@dataclass(frozen=True, slots=True)
class Written:
    """A key the record computes (a total, a derived text): written, never read back."""

    key: str
    # The attribute that holds it (by default the key), or a function of the record.
    get: str | Callable[[Any], object] = ""

    def put(self, record: object, document: dict[str, object]) -> None:
        get = self.get or self.key
        document[self.key] = _write(getattr(record, get) if isinstance(get, str) else get(record))

    def take(self, read: JsonFields, hints: _Hints, values: dict[str, object]) -> None:
        pass


class Group:
    """Fields of the record held together in an object of their own under ``key``."""

    __slots__ = ("key", "members", "optional")

    def __init__(self, key: str, *members: str | Field, optional: bool = False) -> None:
        """``optional``: left out while every member is None, and a document without it has
        them all None (a present one holds every member)."""
        self.key = key
        self.members = tuple(_field(member) for member in members)
        self.optional = optional

    def put(self, record: object, document: dict[str, object]) -> None:
        group: dict[str, object] = {}
        for member in self.members:
            member.put(record, group)
        if not self.optional or any(value is not None for value in group.values()):
            document[self.key] = group

    def take(self, read: JsonFields, hints: _Hints, values: dict[str, object]) -> None:
        if self.optional and not read.has(self.key):
            values.update({member.name: None for member in self.members})
            return
        group = read.child(self.key)
        present = {member.name: _without_none(hints[member.name]) for member in self.members}
        for member in self.members:
            member.take(group, present if self.optional else hints, values)


class Spread:
    """A tuple field laid out as one key per item: a partition as "topic" and "partition"."""

    __slots__ = ("keys", "name")

    def __init__(self, name: str, *keys: str) -> None:
        self.name = name
        self.keys = keys

    def put(self, record: object, document: dict[str, object]) -> None:
        for key, item in zip(self.keys, getattr(record, self.name), strict=True):
            document[key] = _write(item)

    def take(self, read: JsonFields, hints: _Hints, values: dict[str, object]) -> None:
        if self.name not in values:
            items = typing.get_args(hints[self.name])
            values[self.name] = tuple(
                _read(item, read, key) for item, key in zip(items, self.keys, strict=True)
            )


@dataclass(frozen=True, slots=True)
class FormatVersion:
    """The format version a document states, and the refusal of one this version cannot read.

    It is checked before any other key, so a newer document is refused as such, never for a
    field it changed. A record that keeps the version it was read from has a field of the
    key's name; one that does not always writes ``current``. The refusals are worded with
    ``version`` and ``current`` in them.
    """

    current: int
    _: KW_ONLY
    newer: str
    key: str = "format_version"
    older: str | None = None  # the refusal of a version below 1; None: not checked
    absent: int | None = None  # the version of a document without the key; None: none lacks it
    newer_error: type[PipelineError] | None = None  # for a newer one, if not the document's own

    def read(self, read: JsonFields) -> int:
        """The version ``read`` states, refused if this version cannot read it."""
        if self.absent is not None and not read.has(self.key):
            return self.absent
        version = read.integer(self.key)
        if version > self.current:
            message = self.newer.format(version=version, current=self.current)
            raise read.error(message) if self.newer_error is None else self.newer_error(message)
        if self.older is not None and version < 1:
            raise read.error(self.older.format(version=version, current=self.current))
        return version

    def put(self, record: object, document: dict[str, object]) -> None:
        document[self.key] = getattr(record, self.key, self.current)

    def take(self, read: JsonFields, hints: _Hints, values: dict[str, object]) -> None:
        if self.key in values:
            return
        version = self.read(read)
        if self.key in hints:
            values[self.key] = version


_Entry = Field | Written | Group | Spread | FormatVersion


class Fields:
    """The record's fields that no other entry of its shape names, in their order, each under
    its own name: where a document is its fields, the shape says only how it differs.

    ``overrides`` lay some of those fields out otherwise, in the field's own place: a
    :class:`Field` or :class:`Spread` of its name, the :class:`FormatVersion` of its key.
    """

    __slots__ = ("overrides",)

    def __init__(self, *overrides: Field | Spread | FormatVersion) -> None:
        self.overrides = {_names(override)[0]: override for override in overrides}
        if len(self.overrides) < len(overrides):
            raise TypeError("Fields lays a field out once")

    def laid_out(self, kind: type, names: list[str], named: set[str]) -> list[_Entry]:
        """The entries for the fields ``names`` of ``kind``, in order, but those ``named``."""
        unknown = sorted(self.overrides.keys() - set(names))
        if unknown:
            raise TypeError(f"{kind.__name__} has no fields {unknown} for Fields to lay out")
        return [self.overrides.get(name, Field(name)) for name in names if name not in named]


class Shape:
    """How a record lays out its document: its keys in order, and how it is named when read.

    Without entries, every field in order under its own name (``Fields()``). A field no entry
    names is not written; the reader gives it (``read_record(..., field=value)``) or its
    default holds. ``what`` and ``error`` name a document read on its own (``decode``), and a
    part read inside another under its own name, with that document's error.
    """

    __slots__ = ("entries", "error", "what")

    def __init__(
        self,
        *entries: str | _Entry | Fields,
        what: str | None = None,
        error: type[PipelineError] | None = None,
    ) -> None:
        self.entries = tuple(
            _field(entry) if isinstance(entry, str) else entry for entry in entries or (Fields(),)
        )
        self.what = what
        self.error = error
        rest = [entry for entry in self.entries if isinstance(entry, Fields)]
        if len(rest) > 1:
            raise TypeError("a shape has one Fields at the most: it stands for all the rest")
        twice = sorted(self.named() & {name for each in rest for name in each.overrides})
        if twice:
            raise TypeError(f"Fields lays out {twice}, which another entry of the shape names")

    def named(self) -> set[str]:
        """The fields the shape's entries name, but those :class:`Fields` stands for."""
        return {
            name
            for entry in self.entries
            if not isinstance(entry, Fields)
            for name in _names(entry)
        }


class _Layout:
    """A record's shape as it writes and reads: :class:`Fields` replaced by the fields it
    stands for."""

    __slots__ = ("entries", "error", "reading", "what")

    def __init__(self, entries: list[_Entry], shape: Shape) -> None:
        self.entries = tuple(entries)
        self.what = shape.what
        self.error = shape.error
        # Read the version first: a newer document is refused as such, not for a changed key.
        self.reading = sorted(self.entries, key=lambda entry: not isinstance(entry, FormatVersion))


def _names(entry: _Entry) -> tuple[str, ...]:
    """The fields of the record ``entry`` writes and reads (a version's, if the record keeps it)."""
    if isinstance(entry, Group):
        return tuple(member.name for member in entry.members)
    if isinstance(entry, Field | Spread):
        return (entry.name,)
    if isinstance(entry, FormatVersion):
        return (entry.key,)
    return ()


class JsonRecord:
    """A dataclass whose JSON is its fields as its ``json_shape`` lays them out."""

    __slots__ = ()

    json_shape: ClassVar[Shape] = Shape()

    def to_json(self) -> dict[str, object]:
        return encode(self)

    @classmethod
    def from_json(cls, data: object) -> Self:
        return decode(cls, data)


def encode(record: object) -> dict[str, object]:
    """The document of a dataclass instance, keys in its shape's order."""
    document: dict[str, object] = {}
    for entry in _layout(type(record)).entries:
        entry.put(record, document)
    return document


def decode(kind: type[_Record], data: object, /, **given: object) -> _Record:
    """Read a document of its own: the record ``kind`` (whose shape names it) from ``data``.

    ``given`` are fields the document does not hold (or that were read already).
    """
    layout = _layout(kind)
    if layout.what is None or layout.error is None:
        raise TypeError(f"{kind.__name__} is read only as part of a document that names it")
    return read_record(kind, JsonFields(data, layout.what, layout.error), **given)


def read_record(kind: type[_Record], read: JsonFields, /, **given: object) -> _Record:
    """Read the record ``kind`` from an object of a document being read (``given`` as for
    :func:`decode`)."""
    hints = _hints(kind)
    values = dict(given)
    for entry in _layout(kind).reading:
        entry.take(read, hints, values)
    return cast("Callable[..., _Record]", kind)(**values)


def _field(entry: str | Field) -> Field:
    return Field(entry) if isinstance(entry, str) else entry


# Values JSON holds as they are (exactly these types: an enum of str is written as its value).
_PLAIN = frozenset({str, int, float, bool})

# Each record kind's layout and type hints, worked out on its first write or read.
_LAYOUTS: dict[type, _Layout] = {}
_HINTS: dict[type, _Hints] = {}


def _layout(kind: type) -> _Layout:
    layout = _LAYOUTS.get(kind)
    if layout is None:
        layout = _LAYOUTS[kind] = _laid_out(kind)
    return layout


def _hints(kind: type) -> _Hints:
    hints = _HINTS.get(kind)
    if hints is None:
        hints = _HINTS[kind] = typing.get_type_hints(kind)
    return hints


def _laid_out(kind: type) -> _Layout:
    declared: Shape = getattr(kind, "json_shape", None) or Shape()
    names = [field.name for field in dataclasses.fields(kind)]
    named = declared.named()
    entries = [
        laid
        for entry in declared.entries
        for laid in (entry.laid_out(kind, names, named) if isinstance(entry, Fields) else (entry,))
    ]
    # A version need not be a field: a record that does not keep it writes the current one.
    fields = {
        name for entry in entries if not isinstance(entry, FormatVersion) for name in _names(entry)
    }
    unknown = sorted(fields - set(names))
    if unknown:
        raise TypeError(f"{kind.__name__} has no fields {unknown}: compute a key with Written")
    return _Layout(entries, declared)


def _write(value: object) -> object:
    if value is None or type(value) in _PLAIN:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {key: _write(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_write(item) for item in value]
    return value


def _read(hint: object, read: JsonFields, key: str, unknown: str = UNKNOWN_MEMBER) -> object:
    """The value of ``key`` as the type ``hint`` says."""
    reader = _READERS.get((hint, unknown))
    if reader is None:
        reader = _READERS[(hint, unknown)] = _reader(hint, unknown)
    return reader(read, key)


# How a value of each type is read (and an enum's unknown member refused), worked out once.
_READERS: dict[tuple[object, str], Callable[[JsonFields, str], object]] = {}


def _reader(hint: object, unknown: str) -> Callable[[JsonFields, str], object]:
    plain: dict[object, Callable[[JsonFields, str], object]] = {
        str: JsonFields.text,
        int: JsonFields.integer,
        bool: JsonFields.boolean,
        object: JsonFields.raw,
    }
    inner = _without_none(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in plain:
        return plain[hint]
    if inner is not hint:
        return lambda read, key: None if read.raw(key) is None else _read(inner, read, key, unknown)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        kind = hint
        return lambda read, key: read.member(key, kind, unknown)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        record = hint
        return lambda read, key: read_record(record, read.child(key, _layout(record).what))
    if origin in (Mapping, dict) and args == (str, object):
        return JsonFields.mapping
    if origin is tuple and args[1:] == (Ellipsis,) and args[0] is str:
        return lambda read, key: tuple(read.texts(key))
    item = args[0] if origin is tuple and args[1:] == (Ellipsis,) else None
    if isinstance(item, type) and dataclasses.is_dataclass(item):
        return lambda read, key: tuple(
            read_record(item, child) for child in read.children(key, _layout(item).what)
        )
    raise TypeError(f"no JSON reading of {hint!r}: give its field one (Field(read=...))")


def _without_none(hint: object) -> object:
    """``X`` for ``X | None``, else ``hint`` itself."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint
    rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return rest[0] if len(rest) == 1 else hint
