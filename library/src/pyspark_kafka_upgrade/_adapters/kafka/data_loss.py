"""Records that should be read are gone: fail the query or warn, as failOnDataLoss says."""

from __future__ import annotations

import logging

from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import DataLossError

logger = logging.getLogger(__name__)

# The built-in source's explanations, so that both connectors read the same in a log.
_CAUSE = (
    "Some data may have been lost because they are not available in Kafka any more; either "
    "the data was aged out by Kafka or the topic may have been deleted before all the data "
    "in the topic was processed."
)
_TO_CONTINUE = (
    " If you don't want your streaming query to fail on such cases, set the source option "
    '"failOnDataLoss" to "false".'
)
_TO_FAIL = (
    " If you want your streaming query to fail on such cases, set the source option "
    '"failOnDataLoss" to "true".'
)


def report_data_loss(message: str, *, fail: bool) -> None:
    """Raise :class:`DataLossError` when ``fail``, else log a warning and return."""
    if fail:
        raise DataLossError(f"{message}. {_CAUSE}{_TO_CONTINUE}")
    logger.warning("%s. %s%s", message, _CAUSE, _TO_FAIL)
