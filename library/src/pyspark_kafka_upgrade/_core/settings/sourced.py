"""A setting's value as one layer gives it, with where it came from, and the layers merged."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark_kafka_upgrade._core.settings.toml_writing import as_toml


@dataclass(frozen=True, slots=True)
class SourcedValue:
    value: object
    source: str
    # Read from TOML (the package defaults, a config file), where every value has a type:
    # it must already be the setting's. Text from the environment and --set is parsed.
    typed: bool = False

    def shown(self) -> str:
        """The value as its source spells it: TOML for a file, Python's repr for text."""
        return as_toml(self.value) if self.typed else repr(self.value)


Layer = dict[str, dict[str, SourcedValue]]


def merge(into: Layer, layer: Layer) -> None:
    for section_name, values in layer.items():
        into.setdefault(section_name, {}).update(values)
