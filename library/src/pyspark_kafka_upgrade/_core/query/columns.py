"""The column names other parts of the pipeline rely on: the ledger, the reader, the upgrade."""

from __future__ import annotations

from typing import Literal

TimeSource = Literal["payload", "kafka"]
EVENT_TIME = "event_time"
MALFORMED_REASON = "malformed_reason"
REASON = "reason"
WINDOW_START = "window_start"
WINDOW_END = "window_end"
# The built-in Kafka source's columns, in its order; ``headers`` only when asked for.
KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
KAFKA_POSITION = ("topic", "partition", "offset")

# Names for DataFrame.observe; the listener reads them from progress.observedMetrics.
BATCH_METRICS = "batch_metrics"
INPUT_ROWS = "input_rows"
MALFORMED_ROWS = "malformed_rows"
MIN_EVENT_TIME_US = "min_event_time_us"
MAX_EVENT_TIME_US = "max_event_time_us"
