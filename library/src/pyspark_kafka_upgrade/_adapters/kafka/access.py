"""Can this job's Kafka login read its topics? Asked once, before anything starts.

A client that cannot log in does not fail: librdkafka and Java's client both retry for as
long as they are let (Spark's built-in source waited three minutes on a plaintext
listener). So ``run``, ``upgrade plan`` and ``verify`` first connect as the connectors
will, with the same settings, and turn the first answer into one line that names the cause:
a refused login, an untrusted certificate, TLS or SASL against a listener that speaks
neither, or an ACL the user lacks (the topic and the operation).

Messages name users, hosts, topics and options, never a password: librdkafka's texts carry
none, and nothing here adds one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection

# Re-exported without __all__, as kafka_metadata's imports note.
from confluent_kafka.admin import (  # type: ignore[attr-defined, unused-ignore]
    AclOperation,
    AdminClient,
)

from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import KafkaSourceError
from pyspark_kafka_upgrade._adapters.kafka.kafka_metadata import create_consumer
from pyspark_kafka_upgrade._domain.errors import ConfigError

# Long enough for a broker across a region to answer a TLS and SCRAM handshake; an answer
# that proves the cause usually comes within a second.
DEFAULT_TIMEOUT_S = 15.0
_ATTEMPT_S = 0.5
# librdkafka's log lines repeat every retry on stderr; here they go to a logger instead,
# and the first error callback is what counts.
_LOGGER = logging.getLogger(__name__)
# Without a handler of its own, logging's last resort would print them on stderr after all.
_LOGGER.addHandler(logging.NullHandler())


class KafkaAccessError(KafkaSourceError, ConfigError):
    """The job's Kafka login cannot read its topics; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class _Login:
    """Who connects where, for the messages: no password here."""

    servers: str
    protocol: str
    mechanism: str
    user: str

    @property
    def who(self) -> str:
        if self.user:
            return f"user {self.user!r} ({self.mechanism or 'GSSAPI'})"
        return "this client"


def check_access(
    client_config: Mapping[str, str],
    topics: Sequence[str],
    group_id: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Connect with ``client_config`` and check that ``topics`` may be described and read.

    A topic that does not exist passes where the user may describe topics (the connectors
    wait for it, as Spark's does); without Describe, Kafka answers as if it did not exist
    and the refusal says both.

    Raises:
        KafkaAccessError: the first cause found, in one line.
    """
    login = _Login(
        servers=client_config.get("bootstrap.servers", ""),
        protocol=client_config.get("security.protocol", "plaintext").upper(),
        mechanism=(
            client_config.get("sasl.mechanism") or client_config.get("sasl.mechanisms", "")
        ).upper(),
        user=client_config.get("sasl.username", ""),
    )
    errors: list[KafkaError] = []
    consumer = create_consumer(
        {"group.id": group_id, **client_config, "error_cb": errors.append, "logger": _LOGGER}
    )
    try:
        _connect(consumer, login, errors, timeout_s)
        # Asked by name: a listing of all topics leaves out, without a word, the ones the
        # user may not describe, and a missing ACL would pass for a missing topic.
        found = {name: _topic(consumer, login, name, timeout_s) for name in topics}
    finally:
        consumer.close()
    denied = [
        name for name, error in found.items() if error == KafkaError.TOPIC_AUTHORIZATION_FAILED
    ]
    if denied:
        raise KafkaAccessError(_not_allowed(login, "Describe", denied))
    present = [name for name, error in found.items() if error is None]
    if present:
        _check_read(client_config, login, present, timeout_s)


def _topic(consumer: Any, login: _Login, name: str, timeout_s: float) -> int | None:
    """The topic's metadata error code, None if it exists and may be described."""
    try:
        topic = consumer.list_topics(topic=name, timeout=timeout_s).topics.get(name)
    except KafkaException as failure:
        raise KafkaAccessError(
            f"the broker at {login.servers} did not describe topic {name!r}: {_text(failure)}"
        ) from None
    if topic is None:
        return KafkaError.UNKNOWN_TOPIC_OR_PART
    return None if topic.error is None else int(topic.error.code())


def _connect(consumer: Any, login: _Login, errors: list[KafkaError], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        try:
            # Any answer means the connection, TLS and login all worked.
            consumer.list_topics(timeout=_ATTEMPT_S)
            return
        except KafkaException as failure:
            last = _text(failure)
        # Error callbacks are served by poll, not by list_topics.
        consumer.poll(0)
        for reported in errors:
            refusal = _refusal(login, reported)
            if refusal is not None:
                raise KafkaAccessError(refusal)
            last = reported.str()
        if time.monotonic() >= deadline:
            detail = f": {_cause(last)}" if last else ""
            raise KafkaAccessError(
                f"no Kafka broker at {login.servers} answered within {timeout_s:g} s{detail}"
            )
        errors.clear()


def _refusal(login: _Login, error: KafkaError) -> str | None:
    """One line for an error that will not go away by retrying; None for one that may."""
    code, text = error.code(), error.str()
    at = f"the broker at {login.servers}"
    if code == KafkaError._AUTHENTICATION:
        # The broker offered no mechanism, or refused the handshake: no SASL listener.
        if "Request not valid in current SASL state" in text:
            return (
                f"{at} does not speak SASL on that port (a PLAINTEXT or SSL listener?), but "
                f"kafka.options sets security.protocol {login.protocol}: {_cause(text)}"
            )
        return (
            f"Kafka refused the login of {login.who} at {login.servers}: wrong password or "
            f"unknown user (Kafka does not say which): {_cause(text)}"
        )
    if code == KafkaError._SSL:
        if "certificate verify failed" in text:
            return (
                f"{at} shows a certificate this client does not trust: set kafka.options "
                f"ssl.truststore.location to the PEM file of the CA that signed it "
                f"({_cause(text)})"
            )
        return f"the TLS handshake with {at} failed: {_cause(text)}"
    if code == KafkaError._TRANSPORT and "PLAINTEXT broker listener" in text:
        return (
            f"{at} closed the TLS handshake: it is a PLAINTEXT listener, but kafka.options "
            f"sets security.protocol {login.protocol}"
        )
    if code in (KafkaError._INVALID_ARG, KafkaError._UNSUPPORTED_FEATURE):
        return f"the Kafka client cannot connect as configured: {_cause(text)}"
    return None


def _check_read(
    client_config: Mapping[str, str], login: _Login, topics: Sequence[str], timeout_s: float
) -> None:
    admin = AdminClient(dict(client_config), logger=_LOGGER)
    try:
        futures = admin.describe_topics(
            TopicCollection(list(topics)),
            include_authorized_operations=True,
            request_timeout=timeout_s,
        )
        unreadable = []
        for name, future in futures.items():
            described = future.result(timeout=timeout_s)
            operations = described.authorized_operations
            # None: the broker does not report them (older brokers, some compatibles).
            if operations is not None and AclOperation.READ not in operations:
                unreadable.append(name)
    except KafkaException as error:
        if _code(error) == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise KafkaAccessError(_not_allowed(login, "Describe", topics)) from None
        # A broker that cannot describe topics this way still serves the connectors.
        return
    if unreadable:
        raise KafkaAccessError(_not_allowed(login, "Read", unreadable))


def _not_allowed(login: _Login, operation: str, topics: Sequence[str]) -> str:
    names = ", ".join(repr(name) for name in topics)
    principal = f"User:{login.user}" if login.user else "this client's principal"
    noun = "topic" if len(topics) == 1 else "topics"
    # Kafka answers a user without Describe the same whether the topic exists or not.
    unknown = " (or it does not exist)" if operation == "Describe" else ""
    return (
        f"{login.who} may not {operation} {noun} {names}{unknown} at {login.servers}: the "
        f"connectors need Describe and Read on each topic (kafka-acls --add --allow-principal "
        f"{principal} --operation Describe --operation Read --topic <topic>)"
    )


def _cause(text: str) -> str:
    # librdkafka prefixes the broker's address and appends its state machine's timing.
    cause = text.split("/bootstrap: ", 1)[-1]
    return cause.split(" (after ", 1)[0]


def _code(error: KafkaException) -> int | None:
    detail = error.args[0] if error.args else None
    return detail.code() if isinstance(detail, KafkaError) else None


def _text(error: KafkaException) -> str:
    detail = error.args[0] if error.args else error
    return detail.str() if isinstance(detail, KafkaError) else str(detail)
