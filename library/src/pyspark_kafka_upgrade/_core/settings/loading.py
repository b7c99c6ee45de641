"""The layers read, merged and built into checked settings, each value with its source."""

from __future__ import annotations

import dataclasses
import json
import os
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark_kafka_upgrade._core.settings.files import (
    choose_config_file,
    layer_from_document,
    read_defaults,
    read_toml,
)
from pyspark_kafka_upgrade._core.settings.sections import SECTIONS, Settings
from pyspark_kafka_upgrade._core.settings.sourced import Layer, SourcedValue, merge
from pyspark_kafka_upgrade._core.settings.text_sources import coerce, read_env, read_overrides
from pyspark_kafka_upgrade._core.settings.toml_types import check_type
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade._domain.values.redaction import redact_value
from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError

# Client options that hold a password; written into a config file, they draw a warning.
_PASSWORD_OPTIONS = ("sasl.jaas.config", "sasl.password", "ssl.key.password")


@dataclass(frozen=True, slots=True)
class LoadedSettings:
    settings: Settings
    sources: Mapping[str, str]
    config_file: Path | None
    # One line each, for the CLI to print: accepted, but worth changing.
    warnings: tuple[str, ...] = ()

    def describe(self) -> list[tuple[str, str, str]]:
        """(key, redacted value as JSON, source) for every setting, in declaration order."""
        return [
            (f"{section}.{name}", json.dumps(value), self.sources[f"{section}.{name}"])
            for section, name, value in self._redacted()
        ]

    def as_dict(self) -> dict[str, dict[str, object]]:
        document: dict[str, dict[str, object]] = {section: {} for section in SECTIONS}
        for section, name, value in self._redacted():
            document[section][name] = value
        return document

    def _redacted(self) -> Iterator[tuple[str, str, object]]:
        """(section, name, plain redacted value) for every setting, in declaration order."""
        for section_name in SECTIONS:
            section = getattr(self.settings, section_name)
            for f in dataclasses.fields(section):
                value = _plain(getattr(section, f.name))
                yield section_name, f.name, redact_value(f"{section_name}.{f.name}", value)


def load_settings(
    project: Project,
    config_file: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Sequence[str] = (),
) -> LoadedSettings:
    """Load and validate settings; raise :class:`ConfigError` with one actionable line."""
    env = os.environ if env is None else env
    layer: Layer = {}
    merge(layer, layer_from_document(read_defaults(project), source="package defaults"))
    chosen_file = choose_config_file(config_file, env, project.config_env_var)
    if chosen_file is not None:
        merge(layer, read_toml(chosen_file, source=str(chosen_file)))
    merge(layer, read_env(env, project))
    merge(layer, read_overrides(overrides))
    settings, sources = _build(layer, project)
    return LoadedSettings(
        settings=settings,
        sources=sources,
        config_file=chosen_file,
        warnings=tuple(_passwords_in_files(layer)),
    )


def _passwords_in_files(layer: Layer) -> Iterator[str]:
    """A warning per password a file holds: it works, and it ends up in git and backups."""
    options = layer.get("kafka", {}).get("options")
    if options is None or not isinstance(options.value, dict):
        return
    if not options.typed:
        return
    for key in sorted(options.value):
        name = key.removeprefix("kafka.")
        value = str(options.value[key])
        if name in _PASSWORD_OPTIONS and (name != "sasl.jaas.config" or "password" in value):
            yield (
                f"{options.source} holds a Kafka password in kafka.options {key!r}; it is "
                "used, but keep secrets out of files: set kafka.sasl_username with "
                "kafka.sasl_password_env or kafka.sasl_password_file instead"
            )


def _build(layer: Layer, project: Project) -> tuple[Settings, dict[str, str]]:
    sections: dict[str, object] = {}
    sources: dict[str, str] = {}
    for section_name, section_type in SECTIONS.items():
        values = layer.get(section_name, {})
        hints = typing.get_type_hints(section_type)
        kwargs: dict[str, object] = {}
        for f in dataclasses.fields(section_type):
            key = f"{section_name}.{f.name}"
            if f.name in values:
                raw = values[f.name]
                kwargs[f.name] = (
                    check_type(raw, hints[f.name], key)
                    if raw.typed
                    else coerce(raw.value, hints[f.name], key, raw.source)
                )
                sources[key] = raw.source
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{key} is required; set it in the config file or with --set")
            else:
                sources[key] = "built-in default"
        try:
            sections[section_name] = section_type(**kwargs)
        except InvalidValueError as error:
            raise ConfigError(_blame(section_name, values, error)) from None
    return Settings(**sections, project=project), sources  # type: ignore[arg-type]


def _blame(section_name: str, values: Mapping[str, SourcedValue], error: InvalidValueError) -> str:
    """Name the setting a validation error is about, with its value and where it was set."""
    key = f"{section_name}.{error.field}"
    raw = values.get(error.field or "")
    if raw is None:
        return f"{key} (built-in default): {error}"
    return f"{key} = {raw.shown()} (from {raw.source}): {error}"


def _plain(value: object) -> object:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value
