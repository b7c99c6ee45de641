"""The reference pipeline the library's tests run: its project, its CLI, its module."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark_kafka_upgrade import cli
from pyspark_kafka_upgrade._example.pipeline import PROJECT

PROG = PROJECT.command
# What `python -m` runs: the reference pipeline's CLI, as a project's console script.
MODULE = "pyspark_kafka_upgrade._example"


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(PROJECT, argv)
