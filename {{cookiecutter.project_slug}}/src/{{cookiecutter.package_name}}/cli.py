"""Command line: parse arguments, call the application layer, turn errors into one line."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from . import __version__
from .app import checkpoint_command, configuration
from .app import run as running
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

    run = commands.add_parser(
        "run",
        help="run the pipeline's current generation until stopped",
        description=RUN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--available-now",
        action="store_true",
        help="process what Kafka holds now, in as many batches as the rate limit needs, "
        "then stop (Trigger.AvailableNow)",
    )
    run.add_argument(
        "--master",
        metavar="URL",
        help="Spark master, e.g. local[2]; default: spark-submit's or Spark's own default",
    )
    run.set_defaults(handler=_run)

    checkpoint = commands.add_parser(
        "checkpoint",
        help="inspect a generation's checkpoint",
        description="Inspect a checkpoint without starting Spark.",
    )
    checkpoint_commands = checkpoint.add_subparsers(dest="checkpoint_command", metavar="COMMAND")
    checkpoint_commands.required = True
    checkpoint_show = checkpoint_commands.add_parser(
        "show",
        help="what a checkpoint committed, and whether its sink and the ledger agree",
        description=CHECKPOINT_SHOW_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    checkpoint_show.add_argument(
        "path",
        nargs="?",
        help="the checkpoint directory (default: the current generation's, from the settings)",
    )
    checkpoint_show.add_argument(
        "--generation",
        type=_positive_int,
        metavar="N",
        help="the generation the checkpoint belongs to (read from PATH when it follows the "
        "pipeline's layout)",
    )
    checkpoint_show.add_argument(
        "--sink", metavar="PATH", help="the output directory (default: the generation's)"
    )
    checkpoint_show.add_argument("--json", action="store_true", help="print the report as JSON")
    checkpoint_show.set_defaults(handler=_checkpoint_show)
    return parser


CHECKPOINT_SHOW_DESCRIPTION = f"""\
Read a checkpoint (metadata, offsets/N, commits/N) and its sink's _spark_metadata, and print:
  - the last committed batch: its offsets per partition and the watermark W it ran with
    (W decides which windows are written; an upgrade restarts from it);
  - batches planned but not committed (a run that stopped mid-batch);
  - the sink's committed batches;
  - whether the ledger agrees with the checkpoint, batch by batch.
The checkpoint is the truth; the ledger is checked against it.

examples:
  {PROG} checkpoint show                 # the current generation
  {PROG} checkpoint show data/checkpoints/generation-1/aggregates --json
"""


RUN_DESCRIPTION = """\
Run the pipeline's current generation: Kafka -> windowed aggregates (append mode) into the
generation's output directory, malformed records into its quarantine directory, and one
ledger record per committed batch. Prints one line per batch:

  batch 12  aggregates  rows 1,204  malformed 3  watermark 2026-11-22T10:05:00Z  lag 40  2.1 s

Ctrl-C or SIGTERM stops it cleanly: the batch in flight finishes and commits first. A second
Ctrl-C stops at once (still safe: the checkpoint restarts the batch).
A second run on the same generation is refused while the first one is alive.
"""


def _config_show(args: argparse.Namespace) -> int:
    loaded = configuration.load(args.config, args.overrides)
    print(configuration.render_settings(loaded, as_json=args.json))
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("generations are numbered from 1")
    return value


def _checkpoint_show(args: argparse.Namespace) -> int:
    loaded = configuration.load(args.config, args.overrides)
    print(
        checkpoint_command.show_checkpoint(
            loaded.settings,
            path=args.path,
            generation=args.generation,
            sink=args.sink,
            as_json=args.json,
        )
    )
    return 0


def _run(args: argparse.Namespace) -> int:
    loaded = configuration.load(args.config, args.overrides)
    stop = threading.Event()
    with _stop_on_signals(stop):
        summary = running.run(
            loaded, available_now=args.available_now, master=args.master, stop=stop
        )
    print(summary)
    return 0


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """First SIGINT/SIGTERM: finish the batches in flight, then stop. Second: stop now."""

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        name = signal.Signals(signum).name
        print(f"{name}: stopping after the batches in flight (again to stop now)", flush=True)

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
