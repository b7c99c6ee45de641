"""A TOML value checked against its setting's type, and a fix shown for the slip it is.

TOML gives each value a type, so a value of another type (``5`` for a host) is a slip to
show, never a value to convert; the message names the fix where one can be told.
"""

from __future__ import annotations

import json
import tomllib
import typing
from collections.abc import Mapping
from typing import Literal

from pyspark_kafka_upgrade._core.settings.sourced import SourcedValue
from pyspark_kafka_upgrade._core.settings.toml_writing import as_toml, toml_key
from pyspark_kafka_upgrade._domain.errors import ConfigError

# A right value for each setting whose type alone does not show one (true or false, and a
# fixed choice, need none), in TOML: a value of the wrong type is answered with it.
_EXAMPLES: dict[str, str] = {
    "pipeline.name": '"page-views-pipeline"',
    "pipeline.root": '"data"',
    "pipeline.state_partitions": "8",
    "kafka.bootstrap_servers": '"localhost:9092"',
    "kafka.topics": '["page-views"]',
    "kafka.starting_offsets": '"earliest"',
    "kafka.max_offsets_per_trigger": "10000",
    # Kafka takes every option as text: the slip to expect is a number without quotes.
    "kafka.options": '{"request.timeout.ms" = "30000"}',
    "kafka.sasl_username": '"pipeline"',
    "kafka.sasl_password_env": '"KAFKA_PASSWORD"',
    "kafka.sasl_password_file": '"/var/run/secrets/kafka/password"',
    "window.duration": '"10 minutes"',
    "window.watermark_delay": '"5 minutes"',
    "window.slide": '"5 minutes"',
    "events.time_field": '"event_time"',
    "events.max_value_bytes": "262144",
    "aggregation.keys": '["article_id"]',
    "aggregation.metrics": '{views = "count(*)"}',
    "sink.trigger_interval": '"10 seconds"',
    "sink.table_location": '"s3://bucket/pipelines/page-views/table"',
    "sink.table_name": '"main.analytics.page_view_counts"',
    "ledger.location": '"data/ledger.sqlite"',
}


def check_type(raw: SourcedValue, hint: object, key: str) -> object:
    """A TOML value, if it has the type ``hint`` needs. TOML gives each value a type, so
    another type is a slip to show (``5`` for a host), never a value to convert."""
    value = raw.value

    def bad(rule: str, fix: str = "") -> ConfigError:
        return ConfigError(f"{key} = {raw.shown()} (from {raw.source}): {rule}{fix and '; '}{fix}")

    example = _EXAMPLES.get(key)
    like = f", e.g. {example}" if example else ""
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if isinstance(value, str) and value in choices:
            return value
        raise bad(f"must be one of {', '.join(map(as_toml, choices))}")
    if hint is bool:
        if isinstance(value, bool):
            return value
        quoted = isinstance(value, str) and value.strip().lower() in {"true", "false"}
        raise bad("must be true or false", "write it without quotes" if quoted else "")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise bad(f"must be a whole number{like}", _whole_number_fix(value))
    if hint is str:
        if isinstance(value, str):
            return value
        raise bad(f"must be text{like}", _text_fix(key, value))
    if origin is tuple:
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            # As from text: blanks around a name and empty names are dropped.
            return tuple(item.strip() for item in value if item.strip())
        raise bad(f"must be an array of text{like}", _array_fix(value))
    if origin in {Mapping, dict} or hint is Mapping:
        if not isinstance(value, dict):
            raise bad(f"must be a table of text{like}", _table_fix(value))
        table = dict(value)
        for name, item in value.items():
            if key in _CLIENT_OPTIONS and isinstance(item, (bool, int, float)):
                # A Kafka client takes every option as text, and its docs write numbers and
                # booleans bare: `"request.timeout.ms" = 30000` means "30000".
                table[name] = as_toml(item)
                continue
            if not isinstance(item, str):
                # A table here is a dotted name left unquoted: the fix shows the line itself.
                entry_like = "" if isinstance(item, dict) else _first_value_example(example)
                raise ConfigError(
                    f"{key}.{toml_key(name)} = {as_toml(item)} (from {raw.source}): "
                    f"must be text{entry_like}; {_entry_fix(name, item)}"
                )
        return table
    raise TypeError(f"{key}: settings.py has no TOML type for {hint}")


# Tables of client options, whose numbers and booleans the client reads as text anyway.
_CLIENT_OPTIONS = frozenset({"kafka.options"})


def _whole_number_fix(value: object) -> str:
    if isinstance(value, str):
        try:
            int(value.strip())
        except ValueError:
            return ""
        return "write it without quotes"
    if isinstance(value, float) and value.is_integer():
        return f"write {int(value)}"
    return ""


def _text_fix(key: str, value: object) -> str:
    if isinstance(value, dict):
        if key == "kafka.starting_offsets":
            # A table is how TOML spells the documented JSON; the JSON is what Kafka reads.
            offsets = json.dumps(value, separators=(",", ":"), default=str)
            return f"write the offsets as JSON in single quotes: '{offsets}'"
        return "one text, not a table"
    if isinstance(value, list):
        if key == "kafka.bootstrap_servers" and all(isinstance(item, str) for item in value):
            # Kafka's own spelling of several brokers is one text, comma-separated.
            return f"write {as_toml(','.join(value))}"
        return "one text, not an array"
    return "write it in quotes"


def _array_fix(value: object) -> str:
    if isinstance(value, str):
        # What the same text means from the environment or --set: names split at commas.
        return f"write {as_toml([name.strip() for name in value.split(',') if name.strip()])}"
    if isinstance(value, dict):
        return "one array, not a table"
    items = value if isinstance(value, list) else [value]
    for position, item in enumerate(items, start=1):
        if isinstance(item, (list, dict)):
            kind = "an array" if isinstance(item, list) else "a table"
            return f"item {position} is {kind}, not text"
    return f"write {as_toml([item if isinstance(item, str) else as_toml(item) for item in items])}"


def _table_fix(value: object) -> str:
    if isinstance(value, str):
        try:
            document = json.loads(value)
        except json.JSONDecodeError:
            return ""
        # JSON is how the environment spells a table; a file has TOML's own.
        if isinstance(document, dict):
            return f"write a TOML table, not JSON text: {as_toml(document)}"
    return ""


def _entry_fix(name: str, item: object) -> str:
    if isinstance(item, dict):
        # `security.protocol = "SSL"` unquoted is a table "security" holding "protocol".
        path, leaf = [name], item
        while isinstance(leaf, dict) and leaf:
            inner, leaf = next(iter(leaf.items()))
            path.append(inner)
        return f"a name with dots needs quotes: {json.dumps('.'.join(path))} = {as_toml(leaf)}"
    if isinstance(item, list):
        return "one text, not an array"
    return "write it in quotes"


def _first_value_example(table_example: str | None) -> str:
    if table_example is None:
        return ""
    values = list(tomllib.loads(f"example = {table_example}")["example"].values())
    return f", e.g. {as_toml(values[0])}" if values else ""
