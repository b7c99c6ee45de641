"""Settings given as text: environment variables and ``--set`` flags, parsed into types.

Unlike a TOML file, text carries no type: ``"false"`` is parsed as a bool, ``"a, b"`` as a
list of names, JSON as a table.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping, Sequence
from typing import Literal

from pyspark_kafka_upgrade._core.settings.sections import SECTIONS, check_known
from pyspark_kafka_upgrade._core.settings.sourced import Layer, SourcedValue
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.values.project import Project


def read_env(env: Mapping[str, str], project: Project) -> Layer:
    layer: Layer = {}
    prefix = project.env_prefix
    for name, value in env.items():
        if not name.startswith(prefix) or name == project.config_env_var:
            continue
        section_name, separator, key = name[len(prefix) :].lower().partition("__")
        if not separator:
            continue  # another tool's variable that happens to share the prefix
        if section_name not in SECTIONS:
            raise ConfigError(
                f"environment variable {name}: unknown section {section_name!r}; "
                f"known: {', '.join(SECTIONS)}"
            )
        check_known(section_name, key, f"environment variable {name}")
        layer.setdefault(section_name, {})[key] = SourcedValue(value, f"env {name}")
    return layer


def read_overrides(overrides: Sequence[str]) -> Layer:
    layer: Layer = {}
    for item in overrides:
        dotted, separator, value = item.partition("=")
        section_name, _, key = dotted.strip().partition(".")
        if not separator or not key:
            raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. kafka.topics=a,b")
        if section_name not in SECTIONS:
            raise ConfigError(f"--set {item!r}: unknown section {section_name!r}")
        if section_name == "kafka" and key.startswith("options."):
            current = layer.setdefault("kafka", {}).get("options")
            options = dict(current.value) if current and isinstance(current.value, dict) else {}
            options[key.removeprefix("options.")] = value
            layer["kafka"]["options"] = SourcedValue(options, "--set")
            continue
        check_known(section_name, key, "--set")
        layer.setdefault(section_name, {})[key] = SourcedValue(value, "--set")
    return layer


def coerce(value: object, hint: object, key: str, source: str) -> object:
    """Text from the environment or --set, parsed into the type ``hint`` names (the
    ``--set kafka.options.NAME=...`` flags arrive gathered, as a table of text)."""

    def bad(rule: str) -> ConfigError:
        return ConfigError(f"{key} = {value!r} (from {source}): {rule}")

    origin = typing.get_origin(hint)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            raise bad(f"must be one of {', '.join(map(str, allowed))}")
        return value
    if hint is bool:
        lowered = str(value).strip().lower()
        if lowered in {"true", "1", "yes", "on"}:
            return True
        if lowered in {"false", "0", "no", "off"}:
            return False
        raise bad("must be true or false")
    if hint is int:
        try:
            return int(str(value).strip())
        except ValueError:
            raise bad("must be a whole number") from None
    if origin is tuple:
        return tuple(name.strip() for name in str(value).split(",") if name.strip())
    if origin in {Mapping, dict} or hint is Mapping:
        document = value
        if isinstance(value, str):
            try:
                document = json.loads(value)
            except json.JSONDecodeError:
                raise bad('must be a JSON object, e.g. {"security.protocol": "SSL"}') from None
        if not isinstance(document, dict):
            raise bad("must be a table of strings")
        return {str(k): str(v) for k, v in document.items()}
    return str(value)
