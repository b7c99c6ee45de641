"""The windowed query, step by step: from one micro-batch's Kafka rows to its windows.

The library reads Kafka into ``raw`` (from the checkpoint, or, in a generation an upgrade
started, from the restart offsets its plan gives), appends what ``windowed_aggregates``
returns to the generation's own output directory in append mode, and records every committed
batch in the offset ledger (a StreamingQueryListener). A step may be added here, for example
a filter; its code is part of the pipeline's signature, so ``upgrade plan`` says whether the
checkpoint can carry the change.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark_kafka_upgrade import steps
from pyspark_kafka_upgrade.steps import Recipe


def windowed_aggregates(raw: DataFrame, recipe: Recipe) -> DataFrame:
    # JSON values into typed events; a malformed record is marked, never dropped.
    parsed = steps.parse_events(raw, recipe)
    # Per-batch counts and event-time bounds, which the offset ledger records.
    events = steps.valid_events(steps.observe_batch_metrics(parsed))
    # Replay filter, when a plan changed the window: events the old generation counted.
    events = steps.drop_counted_events(events, recipe)
    # The watermark, then each event's windows.
    framed = steps.window_events(events, recipe)
    # Replay filter: (event, window) pairs whose window ended at or before W, already written.
    framed = steps.drop_written_windows(framed, recipe)
    # One row per window and key, written once the watermark passes the window's end.
    return steps.aggregate(framed, recipe)


def malformed_records(raw: DataFrame, recipe: Recipe) -> DataFrame:
    # The quarantine: every malformed record, raw bytes intact, with its reason.
    return steps.quarantine_records(steps.parse_events(raw, recipe))
