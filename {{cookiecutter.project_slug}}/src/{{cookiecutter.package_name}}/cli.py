"""The command line of this pipeline, from the library: `run`, `upgrade plan/apply/show/
rollback`, `verify`, `checkpoint show`, `output show`, `config show`, `connector fetch`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from pyspark_kafka_upgrade import cli

from {{ cookiecutter.package_name }}.pipeline import PROJECT


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(PROJECT, argv)


def console() -> NoReturn:
    """The console script: it raises its exit code, which some launchers would drop."""
    cli.console(PROJECT)
