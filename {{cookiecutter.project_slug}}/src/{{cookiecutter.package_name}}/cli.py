"""Command line: parse arguments, call the application layer, turn errors into one line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .app import configuration
from .errors import PipelineError

PROG = __package__ or "pipeline"

DESCRIPTION = """\
A Kafka -> event-time windows -> append-mode file sink pipeline, with an offset ledger
that lets you upgrade it onto a new checkpoint without losing or duplicating an event.
"""

SETTINGS_HELP = f"""\
settings are layered, later wins:
  1. the package's defaults.toml (written from the template answers)
  2. the config file: --config, else ${configuration.CONFIG_ENV_VAR},
     else ./pipeline.toml if present
  3. environment variables {configuration.ENV_PREFIX}<SECTION>__<KEY>,
     e.g. {configuration.ENV_PREFIX}KAFKA__BOOTSTRAP_SERVERS
  4. --set section.key=value (repeatable), e.g. --set window.watermark_delay='10 minutes'

examples:
  {PROG} config show
  {PROG} --set kafka.bootstrap_servers=broker:9092 config show --json
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=SETTINGS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="TOML settings file (see below)"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one setting; wins over the file and the environment",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    config = commands.add_parser(
        "config",
        help="inspect the effective settings",
        description="Inspect the settings this pipeline would run with.",
    )
    config_commands = config.add_subparsers(dest="config_command", metavar="COMMAND")
    config_commands.required = True
    show = config_commands.add_parser(
        "show",
        help="print every setting, its value and where it came from (secrets masked)",
        description="Print every setting, its value and where it came from. "
        "Passwords and other secrets are masked.",
    )
    show.add_argument("--json", action="store_true", help="print the settings as JSON")
    show.set_defaults(handler=_config_show)
    return parser


def _config_show(args: argparse.Namespace) -> int:
    loaded = configuration.load(args.config, args.overrides)
    print(configuration.render_settings(loaded, as_json=args.json))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except BrokenPipeError:
        # The reader went away (`config show | head`): not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stays open until exit
        return 0
    except PipelineError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
