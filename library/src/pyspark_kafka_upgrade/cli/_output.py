"""``output show``: the windows every generation has written, oldest first."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._usage import Commands, add_generation, add_json

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings


def add_output(commands: Commands) -> None:
    output = commands.group(
        "output",
        help="read the pipeline's output across every generation",
        description="Read the output of every generation, each through its own "
        "_spark_metadata (committed files only), with a generation column.",
        examples=[
            "{prog} output show",
        ],
    )
    show = output.add(
        "show",
        help="print the windows written so far, oldest first",
        description="Print the windows every generation has written, oldest first. "
        "Only committed files are read.",
        examples=[
            "{prog} output show --limit 50",
            "{prog} output show --generation 2 --json",
        ],
    )
    show.add_argument(
        "--limit", type=int, default=20, metavar="N", help="rows to print (default 20)"
    )
    add_generation(show, "only this generation")
    add_json(show, "the rows")
    show.set_defaults(handler=_show)


def _show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application import output_show

    return output_show.show_output(
        loaded.settings, limit=args.limit, as_json=args.json, generation=args.generation
    )
