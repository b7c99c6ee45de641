"""Where this project plugs into the library: its command, settings, events and query.

``{{ cookiecutter.package_name }} run`` starts the current generation: the library attaches
the offset ledger's listener (every committed batch's offsets, watermark and event-time
bounds, into the store ``[ledger]`` names) and starts the query at the checkpoint, or at the
restart offsets of the plan ``upgrade apply`` recorded. ``upgrade plan`` and ``upgrade apply``
compare this project's signature with the one the running generation recorded.
"""

from __future__ import annotations

from importlib import resources

from pyspark_kafka_upgrade import Project

from {{ cookiecutter.package_name }} import __version__, events

PROJECT = Project(
    command="{{ cookiecutter.package_name }}",
    version=__version__,
    defaults=resources.files(__package__).joinpath("defaults.toml").read_text("utf-8"),
    events=events.EVENTS,
    # By name: imported by the command that builds the query (run) and by it
    # alone, so that `upgrade plan` and `apply`, the pipeline's downtime, never import Spark.
    query="{{ cookiecutter.package_name }}.query",
)
