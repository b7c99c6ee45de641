"""The container gets the same broker settings as the child-process broker, in the official
image's variable names."""

from __future__ import annotations

from pyspark_kafka_upgrade.testing._kafka.broker_settings import (
    ONE_NODE_TEST_SETTINGS,
    as_image_environment,
)


def wrapper_property(variable: str) -> str:
    """The official image's rule (kafka.docker.KafkaDockerWrapper), written out here as an
    oracle: prefix stripped, lowercased, ``___`` is ``-``, ``__`` is ``_``, ``_`` is ``.``."""
    name = variable.removeprefix("KAFKA_").lower()
    return (
        name.replace("___", "\0")
        .replace("__", "\1")
        .replace("_", ".")
        .replace("\0", "-")
        .replace("\1", "_")
    )


def test_each_setting_becomes_a_variable_the_wrapper_turns_back_into_it() -> None:
    environment = as_image_environment(ONE_NODE_TEST_SETTINGS)

    assert {wrapper_property(key): value for key, value in environment.items()} == dict(
        ONE_NODE_TEST_SETTINGS
    )
    assert environment["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"


def test_an_underscore_in_a_property_survives_the_round_trip() -> None:
    environment = as_image_environment({"listener.name.broker_a.sasl.enabled.mechanisms": "X"})

    assert list(environment) == ["KAFKA_LISTENER_NAME_BROKER__A_SASL_ENABLED_MECHANISMS"]
    assert wrapper_property(*environment) == "listener.name.broker_a.sasl.enabled.mechanisms"
