"""Where this pipeline plugs into the library: its command, its settings, its events, its query."""

from __future__ import annotations

from importlib import resources

from pyspark_kafka_upgrade import Project, __version__
from pyspark_kafka_upgrade._example import events, query

PROJECT = Project(
    command="page_views_pipeline",
    version=__version__,
    defaults=resources.files(__package__).joinpath("defaults.toml").read_text("utf-8"),
    events=events.EVENTS,
    query=query,
)
