"""Upgrade a PySpark Structured Streaming pipeline from Kafka without losing or repeating an
event: the offset ledger, the planner, the restart, ``verify`` and the proofs.

The public API is what this package and its modules ``steps``, ``cli``, ``output`` and
``testing`` export (their ``__all__``); docs/API.md shows each name in use. Every module whose
name starts with ``_`` is internal and may change in any release. ``make api`` compares the
public API with the last release's and fails on a break the version does not announce.
"""

from pyspark_kafka_upgrade._domain.records.advice import Verdict
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.verification import Status, VerifyReport
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.project import EventField, Project

# The one place the version is written; pyproject.toml reads it from here.
__version__ = "0.7.0"

__all__ = [
    "EventField",
    "GenerationLayout",
    "Project",
    "ReplayFilter",
    "Status",
    "Verdict",
    "VerifyReport",
    "__version__",
]
