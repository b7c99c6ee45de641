"""``connector fetch``: the built-in Kafka connector's jars, resolved ahead of a run."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._usage import Commands, add_json

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings

DESCRIPTION = """\
Resolve org.apache.spark:spark-sql-kafka-0-10_2.13 at the installed pyspark's exact version,
with its runtime dependencies, using mvn (its own settings: ~/.m2/settings.xml for mirrors
and proxies), into a per-user cache ($JAR_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, then
pyspark-kafka-upgrade/jars).
A run with kafka.connector = "builtin" does this by itself on first use; this command does it
ahead of time and prints the jars Spark does not already ship, for spark-submit --jars or
SPARK_KAFKA_JARS on a machine without Maven.
"""


def add_connector(commands: Commands) -> None:
    connector = commands.group(
        "connector",
        help="the built-in Kafka connector's jars",
        description="Spark's built-in Kafka connector is not on PyPI; its jars come from Maven.",
        examples=[
            "{prog} connector fetch",
        ],
    )
    fetch = connector.add(
        "fetch",
        help="resolve the connector's jars with mvn into a per-user cache, and list them",
        description=DESCRIPTION,
        raw=True,
        examples=[
            "{prog} connector fetch",
            "export SPARK_KAFKA_JARS=$({prog} connector fetch --json | python3 -c \\\\",
            '    \'import json,sys; print(",".join(json.load(sys.stdin)["jars"]))\')',
        ],
    )
    add_json(fetch, "the list")
    fetch.set_defaults(handler=_fetch)


def _fetch(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application import connector_fetch

    return connector_fetch.fetch_command(as_json=args.json)
