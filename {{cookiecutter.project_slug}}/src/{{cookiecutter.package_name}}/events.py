"""The events this pipeline reads: the fields of their JSON values, with their types.

EDIT HERE when the events change. A field declared ``required=True`` must be present and not
null, the others may be absent or null. Types: string, boolean, int, bigint, double and
timestamp (an ISO-8601 string such as "2026-11-22T10:15:00.250Z"). The field the setting
``events.time_field`` names is the event time when ``events.time_source`` is "payload".

What each window computes is a setting, ``[aggregation]`` in ``pipeline.toml`` (keys, and
metrics such as ``users = "approx_count_distinct(user_id)"``), so that ``upgrade plan`` can
compare two versions without running them. The events, the metrics and the query are all in
the pipeline's signature: a change the checkpoint cannot carry makes ``run`` refuse and
``upgrade plan`` plan a new generation.
"""

from __future__ import annotations

from pyspark_kafka_upgrade import EventField

EVENTS = (
    EventField("article_id", "string", required=True),
    EventField("user_id", "string"),
    EventField("event_time", "timestamp", required=True),
)
