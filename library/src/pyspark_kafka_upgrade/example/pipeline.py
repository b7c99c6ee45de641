"""Where this pipeline plugs into the library: its command, its settings, its events, its query."""

from __future__ import annotations

from importlib import resources

from pyspark_kafka_upgrade import __version__
from pyspark_kafka_upgrade.example import events, query
from pyspark_kafka_upgrade.values.project import Project

PROJECT = Project(
    command="page_views_pipeline",
    version=__version__,
    defaults=resources.files(__package__).joinpath("defaults.toml").read_text("utf-8"),
    events=events.EVENTS,
    query=query,
)
