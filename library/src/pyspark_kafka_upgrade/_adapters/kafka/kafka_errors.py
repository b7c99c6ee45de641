"""Errors the Kafka source raises. Messages are one paragraph and never carry a password."""

from __future__ import annotations

from pyspark_kafka_upgrade._domain.errors import ConfigError, PipelineError


class KafkaSourceError(PipelineError):
    """Base of every error the Kafka source raises on purpose."""


class SourceOptionError(KafkaSourceError, ConfigError):
    """A source option is missing, unknown or has a value that breaks a rule."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"option {option!r}: {message}")
        self.option = option


class StartingOffsetsError(KafkaSourceError):
    """The starting position cannot be resolved against the topics as they are now."""


class DataLossError(KafkaSourceError):
    """Records the query should read are gone, and failOnDataLoss is true."""


class KafkaBrokerError(KafkaSourceError):
    """The brokers did not answer a request, or answered it with an error."""


class InitialOffsetsError(KafkaSourceError):
    """The persisted initial offsets cannot be read or written."""
