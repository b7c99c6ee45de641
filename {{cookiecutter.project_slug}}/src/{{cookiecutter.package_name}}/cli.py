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

from pyspark.errors import PySparkException

from . import __version__
from .app import checkpoint_command, configuration, connector_command, output_command, upgrade
from .app import run as running
from .app.run import cause
from .errors import ConfigError, PipelineError
from .settings import LoadedSettings
from .validation import InvalidValueError

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

    connector = commands.add_parser(
        "connector",
        help="the built-in Kafka connector's jars",
        description="Spark's built-in Kafka connector is not on PyPI; its jars come from Maven.",
    )
    connector_commands = connector.add_subparsers(dest="connector_command", metavar="COMMAND")
    connector_commands.required = True
    connector_fetch = connector_commands.add_parser(
        "fetch",
        help="resolve the connector's jars with mvn into a per-user cache, and list them",
        description=CONNECTOR_FETCH_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    connector_fetch.add_argument("--json", action="store_true", help="print the list as JSON")
    connector_fetch.set_defaults(handler=_connector_fetch)

    upgrade_parser = commands.add_parser(
        "upgrade",
        help="move the pipeline onto a new checkpoint without losing or repeating a window",
        description=UPGRADE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    upgrade_commands = upgrade_parser.add_subparsers(dest="upgrade_command", metavar="COMMAND")
    upgrade_commands.required = True
    plan = upgrade_commands.add_parser(
        "plan",
        help="say whether the change needs a new checkpoint and, if so, where it restarts",
        description="Compare the pipeline the current checkpoint was written with against "
        "the current code and settings. When the checkpoint cannot carry the change, compute "
        "where each partition restarts and explain why. Changes nothing.",
    )
    plan.add_argument("--json", action="store_true", help="print the advice and plan as JSON")
    apply = upgrade_commands.add_parser(
        "apply",
        help="record the plan as the next generation and retire the current one",
        description="Apply the upgrade: record the plan as generation N+1, retire "
        "generation N (its checkpoint and output stay untouched), and leave generation N+1 "
        "for `run` to start. Safe to run again after a crash at any point.",
    )
    for command in (plan, apply):
        command.add_argument(
            "--accept-data-loss",
            action="store_true",
            help="restart partitions whose needed records retention already deleted at their "
            "earliest available offset, instead of refusing",
        )
        command.add_argument(
            "--no-scan",
            action="store_true",
            help="keep the batch-level restart offsets; skip reading Kafka to tighten them",
        )
    plan.set_defaults(handler=_upgrade_plan)
    apply.set_defaults(handler=_upgrade_apply)
    rollback = upgrade_commands.add_parser(
        "rollback",
        help="return to the previous generation, if the new one has not committed a batch",
        description="Undo an applied upgrade whose generation has not committed a batch yet.",
    )
    rollback.set_defaults(handler=_upgrade_rollback)

    output = commands.add_parser(
        "output",
        help="read the pipeline's output across every generation",
        description="Read the output of every generation, each through its own "
        "_spark_metadata (committed files only), with a generation column.",
    )
    output_commands = output.add_subparsers(dest="output_command", metavar="COMMAND")
    output_commands.required = True
    output_show = output_commands.add_parser(
        "show",
        help="print the windows written so far, oldest first",
        description="Print the windows every generation has written, oldest first. "
        "Only committed files are read.",
    )
    output_show.add_argument(
        "--limit", type=int, default=20, metavar="N", help="rows to print (default 20)"
    )
    output_show.add_argument(
        "--generation", type=_positive_int, metavar="N", help="only this generation"
    )
    output_show.add_argument("--json", action="store_true", help="print the rows as JSON")
    output_show.set_defaults(handler=_output_show)
    return parser


UPGRADE_DESCRIPTION = f"""\
Some changes cannot run on the current checkpoint: a new aggregate, other grouping keys, a
new window, another topic, a new major Spark version. The pipeline then starts a new
generation with a new checkpoint and new output directories. In append mode, the windows
still open at the old watermark W were never written: the new generation replays the
Kafka records that feed them and drops (event, window) pairs whose window ended at or
before W, which the old generation already wrote.

  {PROG} upgrade plan        what changed, and where each partition would restart (why)
  {PROG} upgrade apply       make it so: generation N retired, N+1 planned
  {PROG} run                 starts generation N+1 from the plan
  {PROG} upgrade rollback    back to generation N, while N+1 has committed nothing
"""


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


CONNECTOR_FETCH_DESCRIPTION = f"""\
Resolve org.apache.spark:spark-sql-kafka-0-10_2.13 at the installed pyspark's exact version,
with its runtime dependencies, using mvn (its own settings: ~/.m2/settings.xml for mirrors
and proxies), into a per-user cache ($JAR_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, then
pyspark-kafka-upgrade/jars).
A run with kafka.connector = "builtin" does this by itself on first use; this command does it
ahead of time and prints the jars Spark does not already ship, for spark-submit --jars or
SPARK_KAFKA_JARS on a machine without Maven.

examples:
  {PROG} connector fetch
  export SPARK_KAFKA_JARS=$({PROG} connector fetch --json | python3 -c \\
      'import json,sys; print(",".join(json.load(sys.stdin)["jars"]))')
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


# Each handler gets the parsed arguments and the loaded settings, and returns what to print.


def _config_show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return configuration.render_settings(loaded, as_json=args.json)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("generations are numbered from 1")
    return value


def _checkpoint_show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return checkpoint_command.show_checkpoint(
        loaded.settings,
        path=args.path,
        generation=args.generation,
        sink=args.sink,
        as_json=args.json,
    )


def _connector_fetch(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return connector_command.fetch_command(as_json=args.json)


def _output_show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return output_command.show_output(
        loaded.settings, limit=args.limit, as_json=args.json, generation=args.generation
    )


def _upgrade_plan(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return upgrade.plan_command(
        loaded.settings,
        as_json=args.json,
        accept_data_loss=args.accept_data_loss,
        scan=not args.no_scan,
    )


def _upgrade_apply(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return upgrade.apply_command(
        loaded.settings, accept_data_loss=args.accept_data_loss, scan=not args.no_scan
    )


def _upgrade_rollback(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return upgrade.rollback_command(loaded.settings)


def _run(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    stop = threading.Event()
    with _stop_on_signals(stop):
        return running.run(loaded, available_now=args.available_now, master=args.master, stop=stop)


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
        loaded = configuration.load(args.config, args.overrides)
        print(args.handler(args, loaded))
        return 0
    except BrokenPipeError:
        # The reader went away (`config show | head`): not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stays open until exit
        return 0
    except PipelineError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.exit_code
    except InvalidValueError as error:
        # A setting that passed its own checks but does not fit the job (e.g. a grouping key
        # the event schema lacks), found when the job is planned.
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ConfigError.exit_code
    except PySparkException as error:
        print(f"{PROG}: error: Spark: {cause(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
