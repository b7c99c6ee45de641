"""The settings become one set of reader options, the same for both Kafka connectors."""

from __future__ import annotations

from typing import Any

import pytest

from pyspark_kafka_upgrade._adapters.kafka.connector import (
    kafka_read_options,
    source_format,
)
from pyspark_kafka_upgrade._core.settings import (
    KafkaSettings,
)
from pyspark_kafka_upgrade._domain.errors import (
    ConfigError,
)

BASE_OPTIONS = {
    "kafka.bootstrap.servers": "broker-1:9092,broker-2:9092",
    "subscribe": "page-views,clicks",
    "startingOffsets": "earliest",
    "failOnDataLoss": "true",
}


def kafka_settings(**changes: Any) -> KafkaSettings:
    values: dict[str, Any] = {
        "bootstrap_servers": "broker-1:9092,broker-2:9092",
        "topics": ("page-views", "clicks"),
        "connector": "python",
        **changes,
    }
    return KafkaSettings(**values)


@pytest.mark.parametrize("connector", ["python", "builtin"])
def test_defaults_give_the_same_options_for_both_connectors(connector: str) -> None:
    assert kafka_read_options(kafka_settings(connector=connector)) == BASE_OPTIONS


def test_each_connector_has_its_own_format() -> None:
    assert source_format("python") == "pykafka"
    assert source_format("builtin") == "kafka"


@pytest.mark.parametrize("connector", ["python", "builtin"])
def test_every_setting_reaches_its_option(connector: str) -> None:
    settings = kafka_settings(
        connector=connector,
        starting_offsets="latest",
        max_offsets_per_trigger=5000,
        fail_on_data_loss=False,
        options={"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
    )

    assert kafka_read_options(settings) == {
        "kafka.bootstrap.servers": "broker-1:9092,broker-2:9092",
        "subscribe": "page-views,clicks",
        "startingOffsets": "latest",
        "failOnDataLoss": "false",
        "maxOffsetsPerTrigger": "5000",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
    }


def test_max_offsets_per_trigger_is_left_out_at_zero() -> None:
    options = kafka_read_options(kafka_settings(max_offsets_per_trigger=0))

    assert "maxOffsetsPerTrigger" not in options


@pytest.mark.parametrize("connector", ["python", "builtin"])
def test_starting_offsets_argument_overrides_the_setting(connector: str) -> None:
    exact = '{"page-views":{"0":42,"1":-2},"clicks":{"0":7}}'
    settings = kafka_settings(connector=connector, starting_offsets="latest")

    assert kafka_read_options(settings, starting_offsets=exact) == {
        **BASE_OPTIONS,
        "startingOffsets": exact,
    }


def test_initial_offsets_location_goes_to_the_python_source() -> None:
    options = kafka_read_options(
        kafka_settings(connector="python"), initial_offsets_location="data/gen=1/initial"
    )

    assert options == {**BASE_OPTIONS, "initialOffsetsLocation": "data/gen=1/initial"}


def test_builtin_keeps_its_initial_offsets_in_the_checkpoint_itself() -> None:
    options = kafka_read_options(
        kafka_settings(connector="builtin"), initial_offsets_location="data/gen=1/initial"
    )

    assert options == BASE_OPTIONS


def test_client_options_are_prefixed_once() -> None:
    settings = kafka_settings(
        options={"ssl.truststore.location": "/etc/ts.jks", "kafka.client.id": "views"}
    )

    assert kafka_read_options(settings) == {
        **BASE_OPTIONS,
        "kafka.ssl.truststore.location": "/etc/ts.jks",
        "kafka.client.id": "views",
    }


@pytest.mark.parametrize("key", ["bootstrap.servers", "kafka.bootstrap.servers"])
def test_bootstrap_servers_in_client_options_is_refused(key: str) -> None:
    settings = kafka_settings(options={key: "elsewhere:9092"})

    with pytest.raises(ConfigError, match=r"set kafka\.bootstrap_servers instead"):
        kafka_read_options(settings)
