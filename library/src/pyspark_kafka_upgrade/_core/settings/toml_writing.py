"""A value written as TOML: how a config file spells it, for errors and their fixes."""

from __future__ import annotations

import json
import re
from datetime import date, time

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def as_toml(value: object) -> str:
    """``value`` written as TOML: how a file that holds it spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(map(as_toml, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {as_toml(v)}" for k, v in value.items()) + "}"
    return repr(value)
