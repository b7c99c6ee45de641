"""Follow the settings through a run: which modules receive them, in the order they do.

A profiler hook sees every Python call of this thread. A call counts when it is to a
function of the package and one of its arguments is the settings or one of their sections.
Consecutive calls in the same module are one visit; a module visited again after another
one is a return. Knows nothing of how the run is built, only what the settings types are.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from pyspark_kafka_upgrade._core import settings as settings_module

PACKAGE = settings_module.__name__.partition(".")[0]
SETTINGS_TYPES = tuple(
    value
    for value in vars(settings_module).values()
    if isinstance(value, type)
    and dataclasses.is_dataclass(value)
    and value.__module__.startswith(settings_module.__name__ + ".")
)


@contextmanager
def traced() -> Iterator[list[str]]:
    """The modules (without the package prefix) of each call that receives settings."""
    calls: list[str] = []
    prefix = PACKAGE + "."

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(prefix):
            return
        arguments = frame.f_code.co_varnames[: frame.f_code.co_argcount]
        if any(isinstance(frame.f_locals.get(name), SETTINGS_TYPES) for name in arguments):
            calls.append(module.removeprefix(prefix))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(previous)


def visits(calls: list[str]) -> list[str]:
    """Consecutive calls in one module, merged: the walk from module to module."""
    return [
        module for index, module in enumerate(calls) if index == 0 or calls[index - 1] != module
    ]


def most_visited(calls: list[str]) -> tuple[str, int]:
    return Counter(visits(calls)).most_common(1)[0]


def describe(calls: list[str]) -> str:
    return " -> ".join(visits(calls))
