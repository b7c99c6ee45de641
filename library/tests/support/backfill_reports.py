"""A backfill's plan as `--plan` reports it, for the tests of its document and its words:
two partitions, the first 5 records of partition 0 deleted by retention, the batch that read
them holding events of 10:00:00 to 10:01:20."""

from __future__ import annotations

from typing import Any

from pyspark_kafka_upgrade._domain.records.backfill_report import BackfillReport, OlderQuery
from pyspark_kafka_upgrade._domain.records.signature import Aggregate
from pyspark_kafka_upgrade._domain.records.verification import DeletedRange

BASE_MS = 1_763_805_600_000  # 2025-11-22T10:00:00Z


def backfill_plan(**changes: Any) -> BackfillReport:
    """The plan, with ``changes``."""
    fields: dict[str, Any] = {
        "pipeline": "page-views",
        "generation": 2,
        "aggregates": (
            Aggregate("views", "count(*)"),
            Aggregate("users", "approx_count_distinct(user_id)"),
        ),
        "applied": False,
        "from_ms": 0,
        "to_ms": None,
        "older_queries": (OlderQuery(1, ("users",)),),
        "offsets": {
            "start": {"page-views": {"0": 5, "1": 0}},
            "end": {"page-views": {"0": 91, "1": 91}},
        },
        "records": 177,
        "deleted": (DeletedRange("page-views", 0, 0, 5),),
        "partial_event_times": ((BASE_MS, BASE_MS + 80_000),),
    }
    return BackfillReport(**{**fields, **changes})
