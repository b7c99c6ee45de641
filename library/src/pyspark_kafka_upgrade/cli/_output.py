"""``output show``: the windows every generation has written, oldest first."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings


def show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application import output_show

    return output_show.show_output(
        loaded.settings, limit=args.limit, as_json=args.json, generation=args.generation
    )
