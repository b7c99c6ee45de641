"""The settings' sections, one record each, and the rules a section's values keep together.

Each record checks its own values when built (``InvalidValueError`` naming the field); the
loader turns that into one line naming the setting, its value and where it was set.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.values.catalog import SINKS, Connector, SinkFormat, StoreName
from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade._domain.values.validation import (
    InvalidValueError,
    MetricSpec,
    WindowSpec,
    check_identifier,
    check_kafka_topic,
    parse_metric,
    table_name_parts,
    window_spec,
)


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
    # The one table of a table sink (delta): a path or URI, relative ones resolved as
    # pipeline.root is; empty: <pipeline.root>/output/table. Every generation appends there,
    # so it may not change across an upgrade. The quarantine's table stays under the root.
    table_location: str = ""
    # A catalog name (schema.table or catalog.schema.table) the run registers over
    # table_location as an external table, for readers; the pipeline writes by location.
    table_name: str = ""

    def __post_init__(self) -> None:
        table_settings = [name for name in ("table_location", "table_name") if getattr(self, name)]
        if table_settings and not SINKS[self.format].one_table:
            raise InvalidValueError(
                f'is for a table sink, and sink.format = "{self.format}" writes a directory '
                'per generation under pipeline.root: remove it, or set sink.format = "delta"',
                field=table_settings[0],
            )
        if self.table_location and not self.table_location.strip():
            raise InvalidValueError(
                "must not be blank: a path or URI, or unset for <pipeline.root>/output/table",
                field="table_location",
            )
        if self.table_name:
            try:
                table_name_parts(self.table_name)
            except InvalidValueError as error:
                raise InvalidValueError(str(error), field="table_name") from None
            # A managed table (a name alone) is refused: `upgrade plan` reads the table's log
            # without Spark, by location, and the catalog's answer needs a session.
            if not self.table_location:
                raise InvalidValueError(
                    "needs sink.table_location: a name alone is a managed table, whose place "
                    "the catalog chooses, and `upgrade plan` reads the table's log outside "
                    "Spark by its location; set sink.table_location to the table's external "
                    "location (Unity Catalog: a path under an external location, "
                    "e.g. abfss://... or s3://...)",
                    field="table_name",
                )


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


def check_known(section_name: str, key: str, source: str) -> None:
    known = [f.name for f in dataclasses.fields(SECTIONS[section_name])]
    if key not in known:
        raise ConfigError(
            f"unknown setting {section_name}.{key} in {source}; "
            f"known in [{section_name}]: {', '.join(known)}"
        )


def _require_text(name: str, value: str) -> None:
    if not value.strip():
        raise InvalidValueError("must not be empty", field=name)
