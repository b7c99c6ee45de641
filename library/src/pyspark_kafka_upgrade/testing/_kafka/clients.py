"""confluent-kafka clients of the tests' own: their settings, and whether a broker answers.

librdkafka is chatty (every reconnect, every broker going away at teardown). Its log goes to
a Python logger, so that pytest captures it and shows it only for failing tests.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException

# confluent_kafka.admin is the documented home of AdminClient, but it re-exports it without
# __all__, which mypy --strict reports; "unused-ignore" keeps this quiet once a release
# declares it.
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined, unused-ignore]

from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackend, KafkaBackendError
from pyspark_kafka_upgrade.testing._waiting import wait_until

_LIBRDKAFKA_LOGGER = logging.getLogger("tests.support.librdkafka")
_BROKER_READY_TIMEOUT_S = 30.0

# The helpers take ``client``: librdkafka settings besides bootstrap.servers, such as a
# secured broker's admin login (SecuredKafka.admin_client); none for a plaintext broker.
Client = Mapping[str, str] | None


def client_config(bootstrap: str, client: Client = None) -> dict[str, Any]:
    """A producer's or consumer's settings: ``client``'s, the address, and the logger."""
    return {**(client or {}), "bootstrap.servers": bootstrap, "logger": _LIBRDKAFKA_LOGGER}


def connect_admin(bootstrap: str, client: Client = None) -> AdminClient:
    """An admin client of the broker at ``bootstrap``."""
    # AdminClient's typed config only admits scalars; the logger goes in as a keyword.
    return AdminClient(
        {**(client or {}), "bootstrap.servers": bootstrap}, logger=_LIBRDKAFKA_LOGGER
    )


def serves_metadata(admin: AdminClient, timeout: float) -> bool:
    """Whether the broker answered a metadata request within ``timeout`` seconds."""
    try:
        return bool(admin.list_topics(timeout=timeout).brokers)
    except KafkaException:
        return False


def wait_for_broker(backend: KafkaBackend) -> None:
    """Return once ``backend`` serves metadata.

    Raises:
        KafkaBackendError: it did not within 30 s.
    """
    # A container's port or an external cluster can accept connections before the broker
    # serves metadata; tests should start only once it does.
    admin = connect_admin(backend.bootstrap_servers)
    try:
        wait_until(
            lambda: serves_metadata(admin, timeout=2),
            timeout=_BROKER_READY_TIMEOUT_S,
            interval=0.2,
            message=f"Kafka backend {backend.description} did not answer metadata requests",
        )
    except TimeoutError as exc:
        raise KafkaBackendError(str(exc)) from exc
