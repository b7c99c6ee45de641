"""Settings read from TOML: the project's package defaults and the config file."""

from __future__ import annotations

import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path

from pyspark_kafka_upgrade._core.settings.sections import SECTIONS, check_known
from pyspark_kafka_upgrade._core.settings.sourced import Layer, SourcedValue
from pyspark_kafka_upgrade._core.settings.toml_types import check_type
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.values.project import Project

DEFAULT_CONFIG_FILE = Path("pipeline.toml")


def choose_config_file(
    explicit: Path | None, env: Mapping[str, str], config_env_var: str
) -> Path | None:
    if explicit is not None:
        if not explicit.is_file():
            problem = "is not a file" if explicit.exists() else "does not exist"
            raise ConfigError(f"config file {explicit} {problem}")
        return explicit
    if env.get(config_env_var):
        from_env = Path(env[config_env_var])
        if not from_env.is_file():
            raise ConfigError(f"config file {from_env} (from {config_env_var}) does not exist")
        return from_env
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def read_defaults(project: Project) -> dict[str, object]:
    try:
        return tomllib.loads(project.defaults)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(
            f"the package defaults of {project.command} are not valid TOML: {error}"
        ) from None


def read_toml(path: Path, *, source: str) -> Layer:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"config file {path} cannot be read: {error.strerror}") from None
    return layer_from_document(document, source=source)


def layer_from_document(document: Mapping[str, object], *, source: str) -> Layer:
    layer: Layer = {}
    for section_name, table in document.items():
        if section_name not in SECTIONS:
            raise ConfigError(
                f"unknown section [{section_name}] in {source}; known: {', '.join(SECTIONS)}"
            )
        if not isinstance(table, dict):
            raise ConfigError(f"{section_name} in {source} must be a table")
        hints = typing.get_type_hints(SECTIONS[section_name])
        for key, value in table.items():
            check_known(section_name, key, source)
            sourced = SourcedValue(value, source, typed=True)
            # Checked here, not only if it wins: a file with a wrong type is wrong even
            # while the environment or --set hides it.
            check_type(sourced, hints[key], f"{section_name}.{key}")
            layer.setdefault(section_name, {})[key] = sourced
    return layer
