"""``config show``: the settings a command would run with, and where each came from."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._usage import Commands, add_json

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings


def add_config(commands: Commands) -> None:
    config = commands.group(
        "config",
        help="inspect the effective settings",
        description="Inspect the settings this pipeline would run with.",
        examples=[
            "{prog} config show",
            "{prog} --set kafka.bootstrap_servers=broker:9092 config show --json",
        ],
    )
    show = config.add(
        "show",
        help="print every setting, its value and where it came from (secrets masked)",
        description="Print every setting, its value and where it came from. "
        "Passwords and other secrets are masked.",
        examples=[
            "{prog} config show",
            "{prog} config show --json --set window.watermark_delay='10 minutes'",
        ],
    )
    add_json(show, "the settings")
    show.set_defaults(handler=_show)


def _show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application import config_show

    return config_show.render_settings(loaded, as_json=args.json)
