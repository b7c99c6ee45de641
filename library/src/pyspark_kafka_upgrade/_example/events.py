"""The events this pipeline reads: the fields of their JSON values, with their types.

A field declared ``required=True`` must be present and not null, the others may be absent or
null. Types: string, boolean, int, bigint, double and timestamp (an ISO-8601 string). The
field named by the setting ``events.time_field`` is the event time when
``events.time_source`` is "payload". What each window computes is a setting
(``[aggregation]`` in ``pipeline.toml``), so that ``upgrade plan`` compares two versions
without running them.
"""

from __future__ import annotations

from pyspark_kafka_upgrade import EventField

EVENTS = (
    EventField("article_id", "string", required=True),
    EventField("user_id", "string"),
    EventField("event_time", "timestamp", required=True),
)
