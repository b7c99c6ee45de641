"""Where this pipeline plugs into the library: its command, its settings, its events, its query."""

from __future__ import annotations

from importlib import resources

from pyspark_kafka_upgrade import Project, __version__
from pyspark_kafka_upgrade._example import events

PROJECT = Project(
    command="page_views_pipeline",
    version=__version__,
    defaults=resources.files(__package__).joinpath("defaults.toml").read_text("utf-8"),
    events=events.EVENTS,
    # By name: imported by the commands that build the query, and by them only.
    query="pyspark_kafka_upgrade._example.query",
)
