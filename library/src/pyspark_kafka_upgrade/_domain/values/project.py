"""What a project tells the library: its command, its defaults, its events and its query.

A generated project builds one :class:`Project` in its ``pipeline.py`` and hands it to the
library's CLI; the library reads nothing else of the project. The events are declared here as
plain values, so that ``upgrade plan`` knows them without starting Spark; the query is the
project's own module, whose steps the library calls and whose code the pipeline's signature
fingerprints. Given by name, the module is imported only by the commands that build the query:
the others (``upgrade plan`` and ``apply`` among them, the pipeline's downtime) never wait for
the import of Spark that a query module brings.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import Literal, get_args

from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError, check_identifier

# The types an event field may have, as Spark's simpleString names them.
EventType = Literal["string", "boolean", "int", "bigint", "double", "timestamp"]
EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)
# The functions the library calls in the project's query module.
QUERY_FUNCTIONS = ("windowed_aggregates", "malformed_records")
_COMMAND = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass(frozen=True, slots=True)
class EventField:
    """One field of the JSON events: its name, its type, and whether it must be present."""

    name: str
    type: EventType
    required: bool = False

    def __post_init__(self) -> None:
        check_identifier(self.name, "event field")
        if self.type not in EVENT_TYPES:
            raise InvalidValueError(
                f"event field {self.name!r} has type {self.type!r}; use " + ", ".join(EVENT_TYPES)
            )


@dataclass(frozen=True, slots=True)
class Project:
    """One project's pipeline, as the library sees it."""

    # The console script and Python package: the CLI's name in --help and messages, and the
    # environment variables' prefix (<COMMAND>_<SECTION>__<KEY>).
    command: str
    version: str
    # The text of the project's defaults.toml: the first layer of its settings.
    defaults: str
    events: tuple[EventField, ...]
    # The project's query module, or its name ("package.query"): windowed_aggregates(raw,
    # recipe) and malformed_records(raw, recipe), each a DataFrame from the Kafka rows.
    query: ModuleType | str = field(repr=False)

    def __post_init__(self) -> None:
        if not _COMMAND.fullmatch(self.command):
            raise InvalidValueError(
                f"command {self.command!r} must be a lowercase Python identifier"
            )
        if not self.events:
            raise InvalidValueError("a project declares at least one event field")
        names = [event.name for event in self.events]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise InvalidValueError(f"event fields {repeated} are declared more than once")
        if isinstance(self.query, ModuleType):
            _check_query(self.query)
        elif not _findable(self.query):
            raise InvalidValueError(f"the query module {self.query} is not found")

    @property
    def query_name(self) -> str:
        """The query module's name, without importing it."""
        return self.query.__name__ if isinstance(self.query, ModuleType) else self.query

    def query_module(self) -> ModuleType:
        """The query module, imported now if it was given by name."""
        if isinstance(self.query, ModuleType):
            return self.query
        module = importlib.import_module(self.query)
        _check_query(module)
        return module

    @property
    def env_prefix(self) -> str:
        return self.command.upper() + "_"

    @property
    def config_env_var(self) -> str:
        """The environment variable that names the settings file."""
        return self.env_prefix + "CONFIG"


def _check_query(module: ModuleType) -> None:
    missing = [name for name in QUERY_FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        raise InvalidValueError(
            f"the query module {module.__name__} defines no "
            + " or ".join(f"{name}(raw, recipe)" for name in missing)
        )


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
