"""``checkpoint show``: what a checkpoint committed, read without Spark."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings


def show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.checkpoint_show import show as use_case

    return use_case.show_checkpoint(
        loaded.settings,
        path=args.path,
        generation=args.generation,
        sink=args.sink,
        as_json=args.json,
    )
