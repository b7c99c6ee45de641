"""``config show``: the settings a command would run with, and where each came from."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings


def show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application import config_show

    return config_show.render_settings(loaded, as_json=args.json)
