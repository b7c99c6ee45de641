"""Typed settings, layered from the package's defaults, a TOML file, the environment and flags.

Later layers win: the project's ``defaults.toml`` (shipped in its package, written from the
template answers) < the config file < environment variables < ``--set section.key=value``.
Every value remembers where it came from, so an error names the exact place to fix. A TOML
value must already have its setting's type (``5`` is no host name); text from the
environment and flags is parsed into it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tomllib
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, time
from pathlib import Path
from typing import Any, Literal

from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.values.catalog import Connector, SinkFormat, StoreName
from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade._domain.values.redaction import redact_value
from pyspark_kafka_upgrade._domain.values.validation import (
    InvalidValueError,
    MetricSpec,
    WindowSpec,
    check_identifier,
    check_kafka_topic,
    parse_metric,
    window_spec,
)

DEFAULT_CONFIG_FILE = Path("pipeline.toml")


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    name: str
    # Every generation's checkpoint, output and quarantine live below this root.
    root: str
    # Partitions of the windowed state (spark.sql.shuffle.partitions). A checkpoint keeps
    # the number it started with; a new value takes effect in the next generation.
    state_partitions: int = 8
    # Allow root and ledger on this machine's disk with a cluster master: only when every
    # machine mounts the same path (see spark.cluster_storage).
    local_storage_on_cluster: bool = False

    def __post_init__(self) -> None:
        _require_text("name", self.name)
        _require_text("root", self.root)
        if self.state_partitions < 1:
            raise InvalidValueError("must be a positive number", field="state_partitions")


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    bootstrap_servers: str
    topics: tuple[str, ...]
    connector: Connector  # see values.catalog
    starting_offsets: str = "earliest"
    # 0 leaves batches unbounded, as the built-in connector does without the option.
    max_offsets_per_trigger: int = 0
    fail_on_data_loss: bool = True
    # Passed to the Kafka client with a "kafka." prefix (security.protocol, sasl.*, ssl.*).
    options: Mapping[str, str] = field(default_factory=dict)
    # A SASL PLAIN or SCRAM login: the user, and where its password is read when a command
    # connects (an environment variable's name or a file's path), so that no secret sits in
    # a config file or in git. kafka.options' sasl.mechanism says which mechanism.
    sasl_username: str = ""
    sasl_password_env: str = ""
    sasl_password_file: str = ""

    def __post_init__(self) -> None:
        _require_text("bootstrap_servers", self.bootstrap_servers)
        _check_login(self)
        if not self.topics:
            raise InvalidValueError("at least one topic is required", field="topics")
        for topic in self.topics:
            try:
                check_kafka_topic(topic)
            except InvalidValueError as error:
                raise InvalidValueError(str(error), field="topics") from None
        if self.max_offsets_per_trigger < 0:
            raise InvalidValueError(
                "must be 0 (no limit) or a positive number of records",
                field="max_offsets_per_trigger",
            )

    @property
    def client_options(self) -> dict[str, str]:
        """``options`` by the client's own names: a ``kafka.`` prefix written there is dropped."""
        return {key.removeprefix("kafka."): value for key, value in self.options.items()}

    @property
    def sasl_mechanism(self) -> str:
        """The SASL mechanism ``options`` names, upper-cased; empty if none."""
        return self.client_options.get("sasl.mechanism", "").strip().upper()


# The mechanisms whose login is a user and a password; kafka.sasl_username builds their JAAS
# line. Others (GSSAPI, OAUTHBEARER) are configured with kafka.options alone.
PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Client options that hold a password; written into a config file, they draw a warning.
_PASSWORD_OPTIONS = ("sasl.jaas.config", "sasl.password", "ssl.key.password")


def _check_login(kafka: KafkaSettings) -> None:
    sources = [name for name in ("sasl_password_env", "sasl_password_file") if getattr(kafka, name)]
    if not kafka.sasl_username:
        if sources:
            raise InvalidValueError(
                f"is required with {sources[0]}: the password is of which user?",
                field="sasl_username",
            )
        return
    if len(sources) > 1:
        raise InvalidValueError(
            "set one of sasl_password_env and sasl_password_file, not both",
            field="sasl_password_env",
        )
    if "sasl.jaas.config" in kafka.client_options:
        raise InvalidValueError(
            "is set, and kafka.options has a sasl.jaas.config too: give the login once",
            field="sasl_username",
        )
    if not sources:
        raise InvalidValueError(
            "needs its password from sasl_password_env (an environment variable's name) or "
            "sasl_password_file (a file's path)",
            field="sasl_username",
        )
    mechanism = kafka.sasl_mechanism
    if mechanism not in PASSWORD_MECHANISMS:
        raise InvalidValueError(
            f"needs kafka.options sasl.mechanism set to one of {', '.join(PASSWORD_MECHANISMS)}"
            f", got {mechanism or 'none (Java defaults to GSSAPI)'}",
            field="sasl_username",
        )


@dataclass(frozen=True, slots=True)
class WindowSettings:
    duration: str
    watermark_delay: str
    # Empty means tumbling windows.
    slide: str = ""

    def __post_init__(self) -> None:
        # The three values are only valid together (a slide may not exceed the window).
        window_spec(self.duration, self.slide, self.watermark_delay)

    @property
    def spec(self) -> WindowSpec:
        return window_spec(self.duration, self.slide, self.watermark_delay)


@dataclass(frozen=True, slots=True)
class EventsSettings:
    # "payload": the event time is the JSON field `time_field`; "kafka": the record's
    # Kafka timestamp (CreateTime or LogAppendTime, as the topic is configured).
    time_source: Literal["payload", "kafka"] = "payload"
    time_field: str = "event_time"
    # Larger values are quarantined unparsed: one huge value must not stall a batch.
    max_value_bytes: int = 262_144

    def __post_init__(self) -> None:
        if self.max_value_bytes <= 0:
            raise InvalidValueError("must be a positive number of bytes", field="max_value_bytes")
        try:
            check_identifier(self.time_field, "time_field")
        except InvalidValueError as error:
            raise InvalidValueError(str(error), field="time_field") from None


@dataclass(frozen=True, slots=True)
class AggregationSettings:
    # Columns of the events to group by, besides the window.
    keys: tuple[str, ...]
    # Output column name -> "function(column)"; see validation.METRIC_FUNCTIONS.
    metrics: Mapping[str, str]

    def __post_init__(self) -> None:
        for key in self.keys:
            try:
                check_identifier(key, "grouping key")
            except InvalidValueError as error:
                raise InvalidValueError(str(error), field="keys") from None
        if not self.metrics:
            raise InvalidValueError("at least one metric is required", field="metrics")
        try:
            specs = self.metric_specs
        except InvalidValueError as error:
            raise InvalidValueError(str(error), field="metrics") from None
        clashes = sorted({spec.name for spec in specs} & {*self.keys, "window"})
        if clashes:
            raise InvalidValueError(
                f"metric names {clashes} clash with the window or a grouping key",
                field="metrics",
            )

    @property
    def metric_specs(self) -> tuple[MetricSpec, ...]:
        return tuple(parse_metric(name, text) for name, text in self.metrics.items())


@dataclass(frozen=True, slots=True)
class SinkSettings:
    format: SinkFormat
    trigger_interval: str = "10 seconds"


@dataclass(frozen=True, slots=True)
class LedgerSettings:
    store: StoreName  # see values.catalog
    # A file path for sqlite, a DSN for postgres, a directory URI for filesystem.
    location: str

    def __post_init__(self) -> None:
        _require_text("location", self.location)


@dataclass(frozen=True, slots=True)
class Settings:
    pipeline: PipelineSettings
    kafka: KafkaSettings
    window: WindowSettings
    events: EventsSettings
    aggregation: AggregationSettings
    sink: SinkSettings
    ledger: LedgerSettings
    # The project's code-side declarations (events, query, command): not a section of any
    # file, and carried here so that whatever holds the settings holds the whole job.
    project: Project = field(compare=False, repr=False)


SECTIONS: dict[str, type[Any]] = {
    f.name: typing.get_type_hints(Settings)[f.name]
    for f in dataclasses.fields(Settings)
    if f.name != "project"
}


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
    "ledger.location": '"data/ledger.sqlite"',
}


@dataclass(frozen=True, slots=True)
class SourcedValue:
    value: object
    source: str
    # Read from TOML (the package defaults, a config file), where every value has a type:
    # it must already be the setting's. Text from the environment and --set is parsed.
    typed: bool = False

    def shown(self) -> str:
        """The value as its source spells it: TOML for a file, Python's repr for text."""
        return _toml(self.value) if self.typed else repr(self.value)


Layer = dict[str, dict[str, SourcedValue]]


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
    _merge(layer, _layer_from_document(_defaults(project), source="package defaults"))
    chosen_file = _choose_config_file(config_file, env, project.config_env_var)
    if chosen_file is not None:
        _merge(layer, _read_toml(chosen_file, source=str(chosen_file)))
    _merge(layer, _read_env(env, project))
    _merge(layer, _read_overrides(overrides))
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


def _choose_config_file(
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


def _defaults(project: Project) -> dict[str, object]:
    try:
        return tomllib.loads(project.defaults)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(
            f"the package defaults of {project.command} are not valid TOML: {error}"
        ) from None


def _read_toml(path: Path, *, source: str) -> Layer:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"config file {path} cannot be read: {error.strerror}") from None
    return _layer_from_document(document, source=source)


def _layer_from_document(document: Mapping[str, object], *, source: str) -> Layer:
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
            _check_known(section_name, key, source)
            sourced = SourcedValue(value, source, typed=True)
            # Checked here, not only if it wins: a file with a wrong type is wrong even
            # while the environment or --set hides it.
            _check_type(sourced, hints[key], f"{section_name}.{key}")
            layer.setdefault(section_name, {})[key] = sourced
    return layer


def _read_env(env: Mapping[str, str], project: Project) -> Layer:
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
        _check_known(section_name, key, f"environment variable {name}")
        layer.setdefault(section_name, {})[key] = SourcedValue(value, f"env {name}")
    return layer


def _read_overrides(overrides: Sequence[str]) -> Layer:
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
        _check_known(section_name, key, "--set")
        layer.setdefault(section_name, {})[key] = SourcedValue(value, "--set")
    return layer


def _check_known(section_name: str, key: str, source: str) -> None:
    known = [f.name for f in dataclasses.fields(SECTIONS[section_name])]
    if key not in known:
        raise ConfigError(
            f"unknown setting {section_name}.{key} in {source}; "
            f"known in [{section_name}]: {', '.join(known)}"
        )


def _merge(into: Layer, layer: Layer) -> None:
    for section_name, values in layer.items():
        into.setdefault(section_name, {}).update(values)


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
                    _check_type(raw, hints[f.name], key)
                    if raw.typed
                    else _coerce(raw.value, hints[f.name], key, raw.source)
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


def _check_type(raw: SourcedValue, hint: object, key: str) -> object:
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
        raise bad(f"must be one of {', '.join(map(_toml, choices))}")
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
                table[name] = _toml(item)
                continue
            if not isinstance(item, str):
                # A table here is a dotted name left unquoted: the fix shows the line itself.
                entry_like = "" if isinstance(item, dict) else _first_value_example(example)
                raise ConfigError(
                    f"{key}.{_toml_key(name)} = {_toml(item)} (from {raw.source}): "
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
            return f"write {_toml(','.join(value))}"
        return "one text, not an array"
    return "write it in quotes"


def _array_fix(value: object) -> str:
    if isinstance(value, str):
        # What the same text means from the environment or --set: names split at commas.
        return f"write {_toml([name.strip() for name in value.split(',') if name.strip()])}"
    if isinstance(value, dict):
        return "one array, not a table"
    items = value if isinstance(value, list) else [value]
    for position, item in enumerate(items, start=1):
        if isinstance(item, (list, dict)):
            kind = "an array" if isinstance(item, list) else "a table"
            return f"item {position} is {kind}, not text"
    return f"write {_toml([item if isinstance(item, str) else _toml(item) for item in items])}"


def _table_fix(value: object) -> str:
    if isinstance(value, str):
        try:
            document = json.loads(value)
        except json.JSONDecodeError:
            return ""
        # JSON is how the environment spells a table; a file has TOML's own.
        if isinstance(document, dict):
            return f"write a TOML table, not JSON text: {_toml(document)}"
    return ""


def _entry_fix(name: str, item: object) -> str:
    if isinstance(item, dict):
        # `security.protocol = "SSL"` unquoted is a table "security" holding "protocol".
        path, leaf = [name], item
        while isinstance(leaf, dict) and leaf:
            inner, leaf = next(iter(leaf.items()))
            path.append(inner)
        return f"a name with dots needs quotes: {json.dumps('.'.join(path))} = {_toml(leaf)}"
    if isinstance(item, list):
        return "one text, not an array"
    return "write it in quotes"


def _first_value_example(table_example: str | None) -> str:
    if table_example is None:
        return ""
    values = list(tomllib.loads(f"example = {table_example}")["example"].values())
    return f", e.g. {_toml(values[0])}" if values else ""


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def _toml(value: object) -> str:
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
        return "[" + ", ".join(map(_toml, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _coerce(value: object, hint: object, key: str, source: str) -> object:
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


def _plain(value: object) -> object:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def _require_text(name: str, value: str) -> None:
    if not value.strip():
        raise InvalidValueError("must not be empty", field=name)
