"""What every one-node test broker is configured with, whatever runs it: the ``apache``
backend's child process, the secured broker and the Kafka container."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping

# Beyond the node's roles and listeners, which each way of running a broker sets itself.
ONE_NODE_TEST_SETTINGS: Mapping[str, str] = {
    # One node: every internal topic has a single replica.
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # 50 partitions each by default: the first consumer group or transaction would wait for
    # 50 partitions to be created on a test machine.
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    # Tests create every topic themselves, with retention.ms=-1 (create_topic), and noida-db
    # depends on that setting. A test that forgot, and produced to a topic the broker made up
    # with default retention, should fail here too, not pass.
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    # Retention is checked every 5 minutes by default, the first time 30 s after the start.
    # Tests of records deleted by retention (old CreateTimes, default 7 days) need it within
    # a second or so, as noida-db does; on test-sized logs the check costs nothing.
    "log.retention.check.interval.ms": "1000",
    "log.initial.task.delay.ms": "0",
}


def as_image_environment(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` as the official image's ``KAFKA_*`` variables: its wrapper turns
    ``KAFKA_LOG_DIRS`` back into ``log.dirs`` (``_`` is ``.``, ``__`` is ``_``)."""
    return {
        "KAFKA_" + key.replace("_", "__").replace(".", "_").upper(): value
        for key, value in settings.items()
    }


def cluster_id() -> str:
    """A fresh cluster id in Kafka's own form: 16 random bytes, URL-safe base64 unpadded."""
    while True:
        made = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # Kafka never makes one that starts with "-": a command line would read it as an option.
        if not made.startswith("-"):
            return made
