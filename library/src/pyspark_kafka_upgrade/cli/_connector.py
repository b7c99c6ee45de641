"""``connector fetch``: the built-in Kafka connector's jars, resolved ahead of a run."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings


def fetch(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application import connector_fetch

    return connector_fetch.fetch_command(
        as_json=args.json, delta=loaded.settings.sink.format == "delta"
    )
