"""Upgrade plans as the tests read them: through the plan's own type, never as bare dicts."""

from __future__ import annotations

import json
from typing import Any

from pyspark_kafka_upgrade._domain.records.advice import Advice, Verdict
from pyspark_kafka_upgrade._domain.records.plan import (
    PartitionRestart,
    UpgradePlan,
)
from pyspark_kafka_upgrade._domain.records.replay_filter import (
    ReplayFilter,
)
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from pyspark_kafka_upgrade._domain.records.signature import (
    Aggregate,
    Column,
    PipelineSignature,
    SourceSignature,
)
from pyspark_kafka_upgrade._domain.values.validation import (
    WindowSpec,
)


def planned(text: str) -> UpgradePlan:
    """The plan that ``upgrade plan --json`` printed."""
    return UpgradePlan.from_json(json.loads(text))


def restart_offsets(plan: UpgradePlan, topic: str) -> dict[str, int]:
    """``{"partition": offset}`` of ``topic``, as ``startingOffsets`` names them."""
    return {str(p): offset for (t, p), offset in plan.restart_offsets.items() if t == topic}


def added(plan: UpgradePlan) -> list[str]:
    """``topic:partition`` of each partition the old generation never read."""
    return [f"{p.topic}:{p.partition}" for p in plan.partitions if p.kind is RestartKind.SUBSCRIBED]


def sample_plan_document() -> dict[str, Any]:
    """A small plan's JSON: one partition of one topic, restarting at 20 of 40."""
    return sample_plan().to_json()


def sample_plan() -> UpgradePlan:
    """A small plan: one partition of one topic, restarting at 20 of 40."""
    return UpgradePlan(
        pipeline="page-views",
        root="file:///data",
        from_generation=1,
        to_generation=2,
        last_committed_batch=3,
        watermark_ms=1_763_807_040_000,
        window=WindowSpec(600_000, 600_000, 300_000),
        restart_batch=2,
        replay_filter=ReplayFilter(window_end_after_ms=1_763_807_040_000),
        late_before_event_ms=1_763_806_800_000,
        partitions=(
            PartitionRestart("t", 0, 20, 40, 40, RestartKind.FIRST_FEEDING_RECORD, "because"),
        ),
        notes=(),
        advice=Advice(Verdict.NEEDS_NEW_CHECKPOINT, ()),
        from_signature="sha256:0123456789abcdef",
        to_signature=PipelineSignature(
            sources=(SourceSignature("kafka", "python", ("t",)),),
            event_time_source="payload",
            event_time_field="event_time",
            window=WindowSpec(600_000, 600_000, 300_000),
            grouping_keys=("article_id",),
            aggregates=(Aggregate("views", "count(*)"),),
            output_schema=(Column("views", "bigint"),),
            sink_format="parquet",
            sink_path="file:///data/output/generation-2",
            output_mode="append",
            spark_version="4.2.0",
        ),
        parser_digest="sha256:fedcba9876543210",
        created_at_ms=1_763_900_000_000,
    )
