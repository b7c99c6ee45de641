"""Typed reads of a JSON document's fields, so a bad document fails with the field's path.

The documents that cross modules (an upgrade plan, a pipeline signature) are typed records
read by ``json_record`` through this; each says which error names its own kind of document.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TypeVar

from pyspark_kafka_upgrade._domain.errors import PipelineError

_Member = TypeVar("_Member", bound=Enum)
_Value = TypeVar("_Value")

# How an enum value a document may not hold is refused, unless its field words it otherwise.
UNKNOWN_MEMBER = "{what} field {path!r} is {value!r}, expected one of {allowed}"


class JsonFields:
    """The fields of one JSON object; ``where`` is its path in the document, for messages."""

    def __init__(
        self, data: object, what: str, error: type[PipelineError], where: str = ""
    ) -> None:
        self._what = what
        self._error = error
        self._where = where
        if not isinstance(data, Mapping) or not all(isinstance(key, str) for key in data):
            raise error(f"{what} {where or 'document'} must be a JSON object")
        self._data: Mapping[str, object] = data

    def error(self, message: str) -> PipelineError:
        """An error of this document's kind, for a check the field reads cannot make."""
        return self._error(message)

    def has(self, key: str) -> bool:
        return key in self._data

    def raw(self, key: str) -> object:
        if key not in self._data:
            raise self._error(f"{self._what} has no field {self._path(key)!r}")
        return self._data[key]

    def _path(self, key: str) -> str:
        return f"{self._where}.{key}" if self._where else key

    def _wrong(self, key: str, expected: str, value: object) -> PipelineError:
        return self._error(
            f"{self._what} field {self._path(key)!r} must be {expected}, got {type(value).__name__}"
        )

    def _of_type(self, key: str, kind: type[_Value], expected: str) -> _Value:
        value = self.raw(key)
        # JSON true is no count or offset, though Python's bool is an int.
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self._wrong(key, expected, value)
        return value

    def text(self, key: str) -> str:
        return self._of_type(key, str, "a string")

    def integer(self, key: str) -> int:
        return self._of_type(key, int, "an integer")

    def optional_integer(self, key: str) -> int | None:
        return None if self.raw(key) is None else self.integer(key)

    def boolean(self, key: str) -> bool:
        return self._of_type(key, bool, "true or false")

    def member(self, key: str, kind: type[_Member], unknown: str = UNKNOWN_MEMBER) -> _Member:
        """The member of ``kind`` a string field names; ``unknown`` words the refusal of
        another (with ``what``, ``path``, ``value`` and ``allowed`` in it)."""
        value = self.text(key)
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(str(member.value) for member in kind)
            message = unknown.format(
                what=self._what, path=self._path(key), value=value, allowed=allowed
            )
            raise self._error(message) from None

    def mapping(self, key: str) -> dict[str, object]:
        """A JSON object field as a plain dict, kept as it is (see ``child`` to read into it)."""
        value = self.raw(key)
        if isinstance(value, Mapping) and all(isinstance(name, str) for name in value):
            return dict(value)
        raise self._wrong(key, "a JSON object", value)

    def child(self, key: str, what: str | None = None) -> JsonFields:
        """The object ``key`` holds; ``what`` names it when it is a document of its own kind
        (a damaged file in a report), still failing with this document's error."""
        return JsonFields(self.raw(key), what or self._what, self._error, self._path(key))

    def optional_child(self, key: str) -> JsonFields | None:
        return None if self.raw(key) is None else self.child(key)

    def items(self, key: str) -> list[object]:
        value = self.raw(key)
        if not isinstance(value, list):
            raise self._wrong(key, "a list", value)
        return value

    def texts(self, key: str) -> list[str]:
        values = self.items(key)
        if not all(isinstance(value, str) for value in values):
            raise self._error(f"{self._what} field {self._path(key)!r} must list strings")
        return [str(value) for value in values]

    def children(self, key: str, what: str | None = None) -> list[JsonFields]:
        """The objects the list ``key`` holds; ``what`` as for :meth:`child`."""
        return [
            JsonFields(item, what or self._what, self._error, f"{self._path(key)}[{index}]")
            for index, item in enumerate(self.items(key))
        ]
