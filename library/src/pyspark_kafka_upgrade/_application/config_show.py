"""Use case: load the effective settings and report them, secrets masked."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pyspark_kafka_upgrade._core.settings import LoadedSettings, load_settings
from pyspark_kafka_upgrade._domain.values.project import Project

__all__ = ["load", "render_settings"]


def load(
    project: Project,
    config_file: Path | None,
    overrides: Sequence[str],
    env: Mapping[str, str] | None = None,
) -> LoadedSettings:
    return load_settings(project, config_file, env=env, overrides=overrides)


def render_settings(loaded: LoadedSettings, *, as_json: bool) -> str:
    if as_json:
        return json.dumps(loaded.as_dict(), indent=2)
    rows = loaded.describe()
    key_width = max(len(key) for key, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    origin = f"config file: {loaded.config_file}" if loaded.config_file else "config file: none"
    lines = [origin, ""]
    lines += [
        f"{key:<{key_width}}  {value:<{value_width}}  ({source})" for key, value, source in rows
    ]
    return "\n".join(lines)
