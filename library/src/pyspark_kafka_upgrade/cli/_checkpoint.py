"""``checkpoint show``: what a checkpoint committed, read without Spark."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._usage import Commands, add_generation, add_json

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings

DESCRIPTION = """\
Read a checkpoint (metadata, offsets/N, commits/N) and its sink's _spark_metadata, and print:
  - the last committed batch: its offsets per partition and the watermark W it ran with
    (W decides which windows are written; an upgrade restarts from it);
  - batches planned but not committed (a run that stopped mid-batch);
  - the sink's committed batches;
  - whether the ledger agrees with the checkpoint, batch by batch.
The checkpoint is the truth; the ledger is checked against it.
"""


def add_checkpoint(commands: Commands) -> None:
    checkpoint = commands.group(
        "checkpoint",
        help="inspect a generation's checkpoint",
        description="Inspect a checkpoint without starting Spark.",
        examples=[
            "{prog} checkpoint show",
        ],
    )
    show = checkpoint.add(
        "show",
        help="what a checkpoint committed, and whether its sink and the ledger agree",
        description=DESCRIPTION,
        raw=True,
        examples=[
            "{prog} checkpoint show                 # the current generation",
            "{prog} checkpoint show data/checkpoints/generation-1/aggregates --json",
        ],
    )
    show.add_argument(
        "path",
        nargs="?",
        help="the checkpoint directory (default: the current generation's, from the settings)",
    )
    add_generation(
        show,
        "the generation the checkpoint belongs to (read from PATH when it follows the "
        "pipeline's layout)",
    )
    show.add_argument(
        "--sink", metavar="PATH", help="the output directory (default: the generation's)"
    )
    add_json(show, "the report")
    show.set_defaults(handler=_show)


def _show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.checkpoint_show import show

    return show.show_checkpoint(
        loaded.settings,
        path=args.path,
        generation=args.generation,
        sink=args.sink,
        as_json=args.json,
    )
