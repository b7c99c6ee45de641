"""The events this pipeline reads and what it computes from them: the module a team edits.

Everything else in ``transformations`` follows from what is declared here and from the
settings, so a change of topic or of aggregation starts in this file and in
``pipeline.toml``. The tests in ``tests/unit/test_transformations.py`` run it on static
DataFrames, no Kafka needed.
"""

from __future__ import annotations

from pyspark.sql.types import StringType, StructField, StructType, TimestampType

# ==== EDIT HERE: the events ==============================================================
# The fields of your JSON events, with their types. A field declared nullable=False is
# required; the others may be absent or JSON null. Supported types: string, boolean, int,
# bigint, double and timestamp (an ISO-8601 string in the JSON). The field named by the
# setting events.time_field becomes the event_time column when events.time_source is
# "payload". Changing this schema changes how records parse: `upgrade plan` says so.

EVENT_SCHEMA = StructType(
    [
        StructField("article_id", StringType(), nullable=False),
        StructField("user_id", StringType(), nullable=True),
        StructField("event_time", TimestampType(), nullable=False),
    ]
)
# Derived, so the schema stays the one place to edit. The time field is required only when

# ==== END OF EDIT: the events ============================================================

# ==== EDIT IN pipeline.toml: the metrics =================================================
# What each window computes is a setting, not code, so that `upgrade plan` can compare two
# versions without running them:
#   [aggregation]
#   keys = ["article_id"]
#   metrics = { views = "count(*)", users = "approx_count_distinct(user_id)" }
# A metric is one function of aggregation._METRIC_FUNCTIONS over one column; adding a
# function also needs its output types in aggregate_types (a test holds the two together).
# ==== END OF EDIT: the metrics ===========================================================

# Derived, so the schema stays the one place to edit. The time field is required only when
# the event time comes from the payload.
REQUIRED_FIELDS = tuple(field.name for field in EVENT_SCHEMA.fields if not field.nullable)
