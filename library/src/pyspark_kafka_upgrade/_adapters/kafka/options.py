"""The source's options: the built-in Kafka source's names and meanings, checked up front.

Spark hands a Python data source its options with lower-cased keys; errors name the option
the way a user writes it (``startingOffsets``). Unknown options are refused rather than
ignored, so a typo cannot silently change where a query starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import SourceOptionError
from pyspark_kafka_upgrade._domain.values.offsets import (
    EXAMPLE,
    InvalidOffsetsError,
    Offsets,
    flatten,
    parse_offsets,
)
from pyspark_kafka_upgrade._domain.values.validation import InvalidTopicNameError, check_kafka_topic

# The special offsets of startingOffsets JSON, as in the built-in source.
EARLIEST = -2
LATEST = -1

KAFKA_PREFIX = "kafka."
BOOTSTRAP_SERVERS = "kafka.bootstrap.servers"
SUBSCRIBE = "subscribe"
SUBSCRIBE_PATTERN = "subscribePattern"
STARTING_OFFSETS = "startingOffsets"
ENDING_OFFSETS = "endingOffsets"
STARTING_OFFSETS_BY_TIMESTAMP = "startingOffsetsByTimestamp"
STARTING_TIMESTAMP = "startingTimestamp"
STARTING_TIMESTAMP_STRATEGY = "startingOffsetsByTimestampStrategy"
MAX_OFFSETS_PER_TRIGGER = "maxOffsetsPerTrigger"
FAIL_ON_DATA_LOSS = "failOnDataLoss"
INCLUDE_HEADERS = "includeHeaders"
INITIAL_OFFSETS_LOCATION = "initialOffsetsLocation"
GROUP_ID_PREFIX = "groupIdPrefix"
POLL_TIMEOUT_MS = "kafkaConsumer.pollTimeoutMs"

SUPPORTED = (
    BOOTSTRAP_SERVERS,
    SUBSCRIBE,
    SUBSCRIBE_PATTERN,
    STARTING_OFFSETS,
    ENDING_OFFSETS,
    STARTING_OFFSETS_BY_TIMESTAMP,
    STARTING_TIMESTAMP,
    STARTING_TIMESTAMP_STRATEGY,
    MAX_OFFSETS_PER_TRIGGER,
    FAIL_ON_DATA_LOSS,
    INCLUDE_HEADERS,
    INITIAL_OFFSETS_LOCATION,
    GROUP_ID_PREFIX,
    POLL_TIMEOUT_MS,
)
_BY_LOWER_NAME = {name.lower(): name for name in SUPPORTED}
# Built-in options this source does not implement; each would change what is read.
_UNSUPPORTED = {
    name.lower(): name
    for name in (
        "assign",
        "endingOffsetsByTimestamp",
        "endingTimestamp",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "minPartitions",
        "maxRecordsPerPartition",
        "fetchOffset.numRetries",
        "fetchOffset.retryIntervalMs",
    )
}
# Client settings the source owns, with what to use instead (the built-in refuses the same).
_MANAGED_CLIENT_OPTIONS = {
    "auto.offset.reset": f"set {STARTING_OFFSETS} instead",
    "enable.auto.commit": "the source never commits offsets to Kafka",
    "key.deserializer": "keys are always read as bytes; cast or parse them in the query",
    "value.deserializer": "values are always read as bytes; cast or parse them in the query",
    "interceptor.classes": "interceptors are Java classes and cannot run in this client",
}
_JAAS_LOGIN_MODULES = ("PlainLoginModule", "ScramLoginModule")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_JAAS_SETTING = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
DEFAULT_GROUP_ID_PREFIX = "spark-kafka-source"
# The built-in's default is spark.network.timeout: how long a read may wait for records the
# brokers said exist before the task fails.
DEFAULT_POLL_TIMEOUT_MS = 120_000


@dataclass(frozen=True, slots=True)
class StartFromPosition:
    """Every partition starts at its earliest or latest offset."""

    position: Literal["earliest", "latest"]


@dataclass(frozen=True, slots=True)
class StartFromOffsets:
    """Explicit offsets per partition; -2 means earliest and -1 latest."""

    offsets: Offsets


@dataclass(frozen=True, slots=True)
class StartFromTimestamps:
    """The first offset at or after a timestamp (ms), one for all partitions or per partition."""

    per_partition: Offsets | None
    every_partition: int | None
    # What to do for a partition with no record at or after its timestamp.
    when_none_found: Literal["error", "latest"]


StartingPosition = StartFromPosition | StartFromOffsets | StartFromTimestamps


@dataclass(frozen=True, slots=True)
class SourceOptions:
    bootstrap_servers: str
    # Exactly one of topics and pattern is set.
    topics: tuple[str, ...]
    pattern: str | None
    starting: StartingPosition
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    include_headers: bool
    initial_offsets_location: str | None
    group_id_prefix: str
    poll_timeout_ms: int
    # librdkafka settings from the kafka.* options, prefix removed, bootstrap servers included.
    client_config: Mapping[str, str]
    # Where a batch read stops, exact offsets per partition; a stream refuses it, as the
    # built-in source does.
    ending: Offsets | None = None


def parse_options(raw: Mapping[str, str]) -> SourceOptions:
    """Check every option and return them typed; a SourceOptionError names the first bad one."""
    options = {key.lower(): value for key, value in raw.items()}
    _refuse_unknown(options)
    bootstrap = options.get(BOOTSTRAP_SERVERS.lower(), "").strip()
    if not bootstrap:
        raise SourceOptionError(BOOTSTRAP_SERVERS, "is required, e.g. 'broker1:9092,broker2:9092'")
    topics, pattern = _subscription(options)
    return SourceOptions(
        bootstrap_servers=bootstrap,
        topics=topics,
        pattern=pattern,
        starting=_starting(options),
        max_offsets_per_trigger=_positive_int(options, MAX_OFFSETS_PER_TRIGGER),
        fail_on_data_loss=_boolean(options, FAIL_ON_DATA_LOSS, default=True),
        include_headers=_boolean(options, INCLUDE_HEADERS, default=False),
        initial_offsets_location=_location(options),
        group_id_prefix=options.get(GROUP_ID_PREFIX.lower(), DEFAULT_GROUP_ID_PREFIX).strip()
        or DEFAULT_GROUP_ID_PREFIX,
        poll_timeout_ms=_positive_int(options, POLL_TIMEOUT_MS) or DEFAULT_POLL_TIMEOUT_MS,
        client_config=_client_config(options),
        ending=_ending(options),
    )


def _refuse_unknown(options: Mapping[str, str]) -> None:
    for key in sorted(options):
        if key.startswith(KAFKA_PREFIX) or key in _BY_LOWER_NAME:
            continue
        if key in _UNSUPPORTED:
            raise SourceOptionError(
                _UNSUPPORTED[key],
                "is an option of Spark's built-in Kafka source that the "
                "pykafka source does not support",
            )
        raise SourceOptionError(
            key, f"is not an option of this source; known: {', '.join(SUPPORTED)}"
        )


def _subscription(options: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    subscribe = options.get(SUBSCRIBE.lower())
    pattern = options.get(SUBSCRIBE_PATTERN.lower())
    if (subscribe is None) == (pattern is None):
        raise SourceOptionError(
            SUBSCRIBE,
            f"set exactly one of {SUBSCRIBE!r} (a comma list of topics) and "
            f"{SUBSCRIBE_PATTERN!r} (a regular expression)",
        )
    if pattern is not None:
        if not pattern.strip():
            raise SourceOptionError(SUBSCRIBE_PATTERN, "must not be empty")
        try:
            re.compile(pattern)
        except re.error as error:
            raise SourceOptionError(
                SUBSCRIBE_PATTERN, f"{pattern!r} is not a regular expression: {error}"
            ) from None
        return (), pattern
    topics = tuple(dict.fromkeys(t.strip() for t in (subscribe or "").split(",") if t.strip()))
    if not topics:
        raise SourceOptionError(SUBSCRIBE, "names no topic; give a comma list, e.g. 'views,clicks'")
    for topic in topics:
        try:
            check_kafka_topic(topic)
        except InvalidTopicNameError as error:
            raise SourceOptionError(SUBSCRIBE, str(error)) from None
    return topics, None


def _starting(options: Mapping[str, str]) -> StartingPosition:
    # The built-in's precedence: startingTimestamp > startingOffsetsByTimestamp > startingOffsets.
    strategy = options.get(STARTING_TIMESTAMP_STRATEGY.lower(), "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise SourceOptionError(
            STARTING_TIMESTAMP_STRATEGY, f"must be 'error' or 'latest', got {strategy!r}"
        )
    when_none_found: Literal["error", "latest"] = "error" if strategy == "error" else "latest"
    if STARTING_TIMESTAMP.lower() in options:
        timestamp = _non_negative_int(options, STARTING_TIMESTAMP)
        return StartFromTimestamps(None, timestamp, when_none_found)
    if STARTING_OFFSETS_BY_TIMESTAMP.lower() in options:
        timestamps = _offsets_json(
            options,
            STARTING_OFFSETS_BY_TIMESTAMP,
            what="timestamp",
            fix="give milliseconds since the epoch",
        )
        return StartFromTimestamps(timestamps, None, when_none_found)
    text = options.get(STARTING_OFFSETS.lower(), "latest").strip()
    if text.lower() in ("earliest", "latest"):
        return StartFromPosition("earliest" if text.lower() == "earliest" else "latest")
    offsets = _offsets_json(
        options,
        STARTING_OFFSETS,
        least=EARLIEST,
        fix=f"use {EARLIEST} for earliest or {LATEST} for latest",
    )
    return StartFromOffsets(offsets)


def _ending(options: Mapping[str, str]) -> Offsets | None:
    if ENDING_OFFSETS.lower() not in options:
        return None
    return _offsets_json(
        options, ENDING_OFFSETS, fix="this source ends a batch read only at exact offsets"
    )


def _location(options: Mapping[str, str]) -> str | None:
    location = options.get(INITIAL_OFFSETS_LOCATION.lower(), "").strip()
    if not location:
        return None
    # The driver-side methods run in a Python worker whose working directory is not the
    # job's, so a relative path would land somewhere unexpected.
    if not (_URI_SCHEME.match(location) or location.startswith("/")):
        raise SourceOptionError(
            INITIAL_OFFSETS_LOCATION,
            f"must be an absolute path or a URI (file:, s3a:, hdfs:, ...), got {location!r}",
        )
    return location


def _offsets_json(
    options: Mapping[str, str], name: str, *, fix: str, least: int = 0, what: str = "offset"
) -> Offsets:
    """Option ``name``'s JSON, every value at least ``least``; a smaller one is refused as
    negative, with ``fix``."""
    text = options[name.lower()]
    if not text.strip().startswith("{"):
        expected = "'earliest', 'latest' or JSON" if name == STARTING_OFFSETS else "JSON"
        raise SourceOptionError(name, f"must be {expected} like {EXAMPLE}, got {text!r}")
    try:
        offsets = parse_offsets(text, what=name)
    except InvalidOffsetsError as error:
        raise SourceOptionError(name, str(error)) from None
    for (topic, partition), value in flatten(offsets).items():
        if value < least:
            raise SourceOptionError(
                name, f"topic {topic!r} partition {partition}: {what} {value} is negative; {fix}"
            )
    return offsets


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    number = _integer(options, name)
    if number is not None and number <= 0:
        raise SourceOptionError(name, f"must be a positive number, got {number}")
    return number


def _non_negative_int(options: Mapping[str, str], name: str) -> int:
    number = _integer(options, name)
    if number is None or number < 0:
        raise SourceOptionError(name, f"must be milliseconds since the epoch, got {number}")
    return number


def _integer(options: Mapping[str, str], name: str) -> int | None:
    text = options.get(name.lower())
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise SourceOptionError(name, f"must be a whole number, got {text!r}") from None


def _boolean(options: Mapping[str, str], name: str, *, default: bool) -> bool:
    text = options.get(name.lower())
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise SourceOptionError(name, f"must be 'true' or 'false', got {text!r}")
    return lowered == "true"


def _client_config(options: Mapping[str, str]) -> dict[str, str]:
    config: dict[str, str] = {}
    client = {
        key.removeprefix(KAFKA_PREFIX): value
        for key, value in options.items()
        if key.startswith(KAFKA_PREFIX)
    }
    for setting, value in sorted(client.items()):
        key = KAFKA_PREFIX + setting
        if setting in _MANAGED_CLIENT_OPTIONS:
            raise SourceOptionError(key, f"is not allowed: {_MANAGED_CLIENT_OPTIONS[setting]}")
        if setting == "sasl.jaas.config":
            config.update(_sasl_credentials(key, value))
        elif setting in _JAVA_TRUSTSTORE:
            config.update(_truststore(setting, value, client))
        elif setting == "ssl.endpoint.identification.algorithm":
            # Java turns the host name check off with an empty value, librdkafka with "none".
            config[setting] = value.strip() or "none"
        else:
            config[setting] = value.strip() if setting == "bootstrap.servers" else value
    return config


# Java's trust store settings, which librdkafka names differently; it reads PEM only.
_JAVA_TRUSTSTORE = ("ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates")


def _truststore(setting: str, value: str, client: Mapping[str, str]) -> dict[str, str]:
    kind = client.get("ssl.truststore.type", "").strip().upper()
    if kind != "PEM":
        shown = kind or "not set (Java's default is JKS)"
        raise SourceOptionError(
            KAFKA_PREFIX + "ssl.truststore.type",
            f"is {shown}, but the pykafka source and the upgrade's scans (librdkafka) read "
            "PEM only: set it to PEM and point ssl.truststore.location at the CA's PEM file "
            "(keytool -exportcert -rfc writes one from a JKS or PKCS12 store)",
        )
    if setting == "ssl.truststore.location":
        return {"ssl.ca.location": value.strip()}
    if setting == "ssl.truststore.certificates":
        return {"ssl.ca.pem": value}
    return {}


def _sasl_credentials(option: str, jaas: str) -> dict[str, str]:
    """Java's JAAS line for SASL PLAIN or SCRAM, as librdkafka's username and password."""
    settings = dict(_JAAS_SETTING.findall(jaas))
    if (
        not any(module in jaas for module in _JAAS_LOGIN_MODULES)
        or not {
            "username",
            "password",
        }
        <= settings.keys()
    ):
        # Never echo the value: it holds a password.
        raise SourceOptionError(
            option,
            "only PlainLoginModule and ScramLoginModule lines with a username and a password "
            "can be translated; set kafka.sasl.username and kafka.sasl.password instead",
        )
    return {
        "sasl.username": _unescape(settings["username"]),
        "sasl.password": _unescape(settings["password"]),
    }


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)
