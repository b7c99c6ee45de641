"""Command line: parse arguments, call the application layer, turn errors into one line."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.errors import PySparkException

from pyspark_kafka_upgrade._adapters.spark.spark_errors import cause
from pyspark_kafka_upgrade._application import config_show as configuration
from pyspark_kafka_upgrade._application import connector_fetch as connector_command
from pyspark_kafka_upgrade._application import output_show as output_command
from pyspark_kafka_upgrade._application import verify as verifying
from pyspark_kafka_upgrade._application.checkpoint_show import show as checkpoint_command
from pyspark_kafka_upgrade._application.run import run_command as running
from pyspark_kafka_upgrade._application.upgrade import commands as upgrade
from pyspark_kafka_upgrade._core.settings import LoadedSettings
from pyspark_kafka_upgrade._domain.errors import ConfigError, PipelineError
from pyspark_kafka_upgrade._domain.values.outcome import Outcome
from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade._domain.values.time_text import parse_instant
from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError

__all__ = ["console", "main"]

DESCRIPTION = """\
A Kafka -> event-time windows -> append-mode file sink pipeline, with an offset ledger
that lets you upgrade it onto a new checkpoint without losing or duplicating an event.
"""

SETTINGS_HELP = """\
settings are layered, later wins:
  1. the package's defaults.toml (written from the template answers)
  2. the config file: --config, else ${config_env_var},
     else ./pipeline.toml if present
  3. environment variables {env_prefix}<SECTION>__<KEY>,
     e.g. {env_prefix}KAFKA__BOOTSTRAP_SERVERS
  4. --set section.key=value (repeatable), e.g. --set window.watermark_delay='10 minutes'
--config and --set go before or after the command; of two --set for one key, the later wins.

examples:
  {prog} config show
  {prog} --set kafka.bootstrap_servers=broker:9092 config show --json
  {prog} config show --json --set kafka.bootstrap_servers=broker:9092    # the same
"""


class _UsageError(Exception):
    """Arguments argparse accepted one by one but that do not fit together."""


def build_parser(project: Project) -> argparse.ArgumentParser:
    prog = project.command
    parser = argparse.ArgumentParser(
        prog=prog,
        description=DESCRIPTION,
        epilog=SETTINGS_HELP.format(
            prog=prog, config_env_var=project.config_env_var, env_prefix=project.env_prefix
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {project.version}")
    _add_settings_options(parser, depth=0, prog=prog)
    commands = _Commands(parser, dest="command", depth=1, prog=prog)
    _add_config_command(commands)
    _add_run_command(commands)
    _add_checkpoint_command(commands)
    _add_connector_command(commands)
    _add_upgrade_command(commands)
    _add_output_command(commands)
    _add_verify_command(commands)
    return parser


# --config and --set are accepted by every parser, so they work before or after a command at
# any depth. Each parser stores them under its own dests: a subparser parses into a fresh
# namespace and then copies every value it holds over the parent's (Python 3.11), so one
# shared dest would lose what the parent parsed. _merge_settings_options joins them afterwards.
_LEVEL_SEPARATOR = "@"


def _level_dest(name: str, depth: int) -> str:
    return f"{name}{_LEVEL_SEPARATOR}{depth}"


def _add_settings_options(parser: argparse.ArgumentParser, *, depth: int, prog: str) -> None:
    # Only the top-level help carries the settings epilog that "see below" points to.
    where = "see below" if depth == 0 else f"see {prog} --help"
    parser.add_argument(
        "--config",
        dest=_level_dest("config", depth),
        action="append",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help=f"TOML settings file ({where})",
    )
    parser.add_argument(
        "--set",
        dest=_level_dest("overrides", depth),
        action="append",
        default=argparse.SUPPRESS,
        metavar="SECTION.KEY=VALUE",
        help="override one setting; wins over the file and the environment",
    )


class _Commands:
    """One parser's subcommands; each of them accepts --config and --set too."""

    def __init__(
        self, parser: argparse.ArgumentParser, *, dest: str, depth: int, prog: str
    ) -> None:
        self._group = parser.add_subparsers(dest=dest, metavar="COMMAND", required=True)
        self._depth = depth
        self._prog = prog

    def add(
        self,
        name: str,
        *,
        help: str,
        description: str,
        examples: Sequence[str],
        raw: bool = False,
    ) -> argparse.ArgumentParser:
        """A subcommand whose --help ends with ``examples`` (``{prog}`` is the command)."""
        text = description.format(prog=self._prog)
        command = self._group.add_parser(
            name,
            help=help,
            description=text if raw else textwrap.fill(text, 88),
            epilog=_examples(examples, self._prog),
            # Raw, so that the examples keep their lines; plain descriptions are filled above.
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_settings_options(command, depth=self._depth, prog=self._prog)
        return command

    def below(self, command: argparse.ArgumentParser, *, dest: str) -> _Commands:
        """The subcommands of ``command``, one of the parsers :meth:`add` returned."""
        return _Commands(command, dest=dest, depth=self._depth + 1, prog=self._prog)


def _examples(examples: Sequence[str], prog: str) -> str:
    if not examples:
        raise ValueError("every command's --help ends with an example")
    heading = "example:" if len(examples) == 1 else "examples:"
    return "\n".join([heading, *(f"  {line.format(prog=prog)}" for line in examples)])


def _add_config_command(commands: _Commands) -> None:
    config = commands.add(
        "config",
        help="inspect the effective settings",
        description="Inspect the settings this pipeline would run with.",
        examples=[
            "{prog} config show",
            "{prog} --set kafka.bootstrap_servers=broker:9092 config show --json",
        ],
    )
    show = commands.below(config, dest="config_command").add(
        "show",
        help="print every setting, its value and where it came from (secrets masked)",
        description="Print every setting, its value and where it came from. "
        "Passwords and other secrets are masked.",
        examples=[
            "{prog} config show",
            "{prog} config show --json --set window.watermark_delay='10 minutes'",
        ],
    )
    show.add_argument("--json", action="store_true", help="print the settings as JSON")
    show.set_defaults(handler=_config_show)


def _add_run_command(commands: _Commands) -> None:
    run = commands.add(
        "run",
        help="run the pipeline's current generation until stopped",
        description=RUN_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} run --master 'local[2]'",
            "{prog} run --available-now      # what Kafka holds now, then stop",
        ],
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


def _add_checkpoint_command(commands: _Commands) -> None:
    checkpoint = commands.add(
        "checkpoint",
        help="inspect a generation's checkpoint",
        description="Inspect a checkpoint without starting Spark.",
        examples=[
            "{prog} checkpoint show",
        ],
    )
    show = commands.below(checkpoint, dest="checkpoint_command").add(
        "show",
        help="what a checkpoint committed, and whether its sink and the ledger agree",
        description=CHECKPOINT_SHOW_DESCRIPTION,
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
    show.add_argument(
        "--generation",
        type=_positive_int,
        metavar="N",
        help="the generation the checkpoint belongs to (read from PATH when it follows the "
        "pipeline's layout)",
    )
    show.add_argument(
        "--sink", metavar="PATH", help="the output directory (default: the generation's)"
    )
    show.add_argument("--json", action="store_true", help="print the report as JSON")
    show.set_defaults(handler=_checkpoint_show)


def _add_connector_command(commands: _Commands) -> None:
    connector = commands.add(
        "connector",
        help="the built-in Kafka connector's jars",
        description="Spark's built-in Kafka connector is not on PyPI; its jars come from Maven.",
        examples=[
            "{prog} connector fetch",
        ],
    )
    fetch = commands.below(connector, dest="connector_command").add(
        "fetch",
        help="resolve the connector's jars with mvn into a per-user cache, and list them",
        description=CONNECTOR_FETCH_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} connector fetch",
            "export SPARK_KAFKA_JARS=$({prog} connector fetch --json | python3 -c \\\\",
            '    \'import json,sys; print(",".join(json.load(sys.stdin)["jars"]))\')',
        ],
    )
    fetch.add_argument("--json", action="store_true", help="print the list as JSON")
    fetch.set_defaults(handler=_connector_fetch)


def _add_upgrade_command(commands: _Commands) -> None:
    upgrade_parser = commands.add(
        "upgrade",
        help="move the pipeline onto a new checkpoint without losing or repeating a window",
        description=UPGRADE_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} upgrade plan --out upgrade.json --plot upgrade.png",
            "{prog} upgrade show upgrade.json      # review it, and look at upgrade.png",
            "{prog} upgrade apply upgrade.json     # that plan, or refuses if anything moved",
            "{prog} run                            # starts generation N+1 from the plan",
            "{prog} verify                         # nothing lost, nothing written twice",
            "{prog} upgrade rollback               # instead of run: back to generation N",
        ],
    )
    upgrade_commands = commands.below(upgrade_parser, dest="upgrade_command")
    _add_upgrade_plan(upgrade_commands)
    _add_upgrade_apply(upgrade_commands)
    _add_upgrade_show(upgrade_commands)
    _add_upgrade_rollback(upgrade_commands)


def _add_upgrade_plan(commands: _Commands) -> None:
    plan = commands.add(
        "plan",
        help="say whether the change needs a new checkpoint and, if so, where it restarts",
        description=UPGRADE_PLAN_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} upgrade plan --out upgrade.json --plot upgrade.png",
            "{prog} upgrade show upgrade.json      # review it",
            "{prog} upgrade apply upgrade.json     # that plan, or refuses if anything moved",
        ],
    )
    plan.add_argument("--json", action="store_true", help="print the advice and plan as JSON")
    plan.add_argument(
        "--out",
        type=Path,
        metavar="PLAN",
        help="also write the plan to this file, to review with `upgrade show PLAN` and apply "
        "with `upgrade apply PLAN`",
    )
    _add_plot_option(plan)
    _add_planning_options(plan)
    plan.set_defaults(handler=_upgrade_plan)


def _add_upgrade_apply(commands: _Commands) -> None:
    apply = commands.add(
        "apply",
        help="record the plan as the next generation and retire the current one",
        description=UPGRADE_APPLY_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} upgrade plan --out upgrade.json",
            "{prog} upgrade show upgrade.json      # review it",
            "{prog} upgrade apply upgrade.json     # that plan, or refuses if anything moved",
            "{prog} upgrade apply                  # plan and apply in one step",
        ],
    )
    apply.add_argument(
        "plan",
        nargs="?",
        type=Path,
        metavar="PLAN",
        help="a plan file `upgrade plan --out` wrote: apply exactly that plan "
        "(default: plan now; --accept-data-loss and --no-scan only apply then)",
    )
    _add_planning_options(apply)
    apply.set_defaults(handler=_upgrade_apply, check=_check_upgrade_apply)


def _add_planning_options(command: argparse.ArgumentParser) -> None:
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


def _add_upgrade_show(commands: _Commands) -> None:
    show = commands.add(
        "show",
        help="print a plan file `upgrade plan --out` wrote; changes nothing",
        description=UPGRADE_SHOW_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} upgrade plan --out upgrade.json",
            "{prog} upgrade show upgrade.json --plot upgrade.svg",
        ],
    )
    show.add_argument("plan", type=Path, metavar="PLAN", help="the plan file")
    show.add_argument("--json", action="store_true", help="print the plan as JSON")
    _add_plot_option(show)
    show.set_defaults(handler=_upgrade_show)


def _add_plot_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="also draw the plan to FILE (.png or .svg): per partition, its batches by offset "
        "and event time, W, the open windows, the restart offset and the records to replay "
        "(needs the plot extra: pip install 'pyspark-kafka-upgrade[plot]')",
    )


def _add_upgrade_rollback(commands: _Commands) -> None:
    rollback = commands.add(
        "rollback",
        help="return to the previous generation, if the new one has not committed a batch",
        description=UPGRADE_ROLLBACK_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} upgrade apply upgrade.json",
            "{prog} upgrade rollback               # before generation N+1 commits a batch",
        ],
    )
    rollback.set_defaults(handler=_upgrade_rollback)


def _add_output_command(commands: _Commands) -> None:
    output = commands.add(
        "output",
        help="read the pipeline's output across every generation",
        description="Read the output of every generation, each through its own "
        "_spark_metadata (committed files only), with a generation column.",
        examples=[
            "{prog} output show",
        ],
    )
    show = commands.below(output, dest="output_command").add(
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
    show.add_argument("--generation", type=_positive_int, metavar="N", help="only this generation")
    show.add_argument("--json", action="store_true", help="print the rows as JSON")
    show.set_defaults(handler=_output_show)


VERIFY_DESCRIPTION = """\
Prove, on this pipeline's own data, that nothing was lost or written twice: read the range
back from Kafka (as far as the ledger says the pipeline read), recompute every window with the
pipeline's own parsing and aggregates, and compare with what every generation committed.

Each window and key comes out as one of:
  exact           written once, with the values the events give
  lost            expected but not written, or some of its events never read by the
                  generation that owns it
  written twice   in two generations, or twice in one
  different       written once, with other values
  late by design  holds events that arrived after the watermark passed its end, or in a
                  partition its generation never had (added after it stopped); written
                  exactly without them (FACTS: lateness is judged per batch)
  open            the watermark has not reached its end yet: never called lost
  unclassified    a ledger gap or retention hides what it should hold, and its values
                  do not settle it: said, and not a failure
  abandoned       (older reports) an old window a window change left unwritten
Exit code 0 only when nothing is lost, written twice or different; 1 when something is; 2
when there is nothing to verify or the range is empty.

Which windows: from --from to --to, by window start. The default --from is the windows
around the last upgrade: two window lengths and two watermark delays before its W, rounded
down to a window start (W 10:34:40, 10-minute windows, 5-minute delay: from 10:00:00). It
covers the windows the old generation wrote last, the ones the upgrade rebuilt and those
after. With no upgrade, the same distance before the watermark of the current generation's
last batch. Pass an earlier --from to check older windows too (an incident's range, or
everything since the first event); a later one to read back less.
Times are ISO-8601, UTC unless they say otherwise.
"""


def _add_verify_command(commands: _Commands) -> None:
    verify = commands.add(
        "verify",
        help="prove nothing was lost or written twice, on the pipeline's own data",
        description=VERIFY_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} verify",
            "{prog} verify --from 2026-11-26T09:00:00Z --to 2026-11-26T12:00:00Z",
            "{prog} verify --generation 2 --json > verify.json",
        ],
    )
    verify.add_argument(
        "--from",
        dest="from_time",
        type=_instant,
        metavar="TIME",
        help="first window start to check (default: two windows and two watermark delays "
        "before the last upgrade's W, at a window start)",
    )
    verify.add_argument(
        "--to",
        dest="to_time",
        type=_instant,
        metavar="TIME",
        help="last window end to check (default: as far as the pipeline has read)",
    )
    verify.add_argument(
        "--generation",
        type=_positive_int,
        nargs="+",
        metavar="N",
        help="only the windows these generations own or wrote",
    )
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.add_argument(
        "--master",
        help="Spark master, e.g. local[2]; default: spark-submit's or Spark's own default",
    )
    verify.set_defaults(handler=_verify, check=_check_verify)


UPGRADE_DESCRIPTION = """\
Some changes cannot run on the current checkpoint: a new aggregate, other grouping keys, a
new window, another topic, a new major Spark version. The pipeline then starts a new
generation with a new checkpoint and new output directories. In append mode, the windows
still open at the old watermark W were never written: the new generation replays the
Kafka records that feed them and drops (event, window) pairs whose window ended at or
before W, which the old generation already wrote.

Plan, review (the plan in words, and its picture), then apply exactly what you reviewed.
`upgrade apply` without a file does plan and apply in one step, printing the plan first;
`upgrade rollback` goes back to generation N while N+1 has committed nothing.
"""


UPGRADE_PLAN_DESCRIPTION = """\
Compare the pipeline the current checkpoint was written with against the current code and
settings. When the checkpoint cannot carry the change, compute where each partition restarts
and explain why. Changes nothing; --out also writes the plan to a file, to review and then
apply exactly as reviewed.
"""


UPGRADE_APPLY_DESCRIPTION = """\
Apply the upgrade: record the plan as generation N+1, retire generation N (its checkpoint and
output stay untouched), and leave generation N+1 for `run` to start. Safe to run again after a
crash at any point.

With PLAN, apply exactly that plan file, the one `upgrade plan --out` wrote and you reviewed;
if the pipeline moved since it was planned, refuse and change nothing. Without PLAN, plan and
apply in one step, printing the plan first. --accept-data-loss and --no-scan only work without
PLAN: a plan file already fixed them when it was planned.
"""


UPGRADE_SHOW_DESCRIPTION = """\
Print a plan file `upgrade plan --out` wrote: what changed, where each partition restarts and
why. Changes nothing.
"""


UPGRADE_ROLLBACK_DESCRIPTION = """\
Undo an applied upgrade whose generation has not committed a batch yet.
"""


CHECKPOINT_SHOW_DESCRIPTION = """\
Read a checkpoint (metadata, offsets/N, commits/N) and its sink's _spark_metadata, and print:
  - the last committed batch: its offsets per partition and the watermark W it ran with
    (W decides which windows are written; an upgrade restarts from it);
  - batches planned but not committed (a run that stopped mid-batch);
  - the sink's committed batches;
  - whether the ledger agrees with the checkpoint, batch by batch.
The checkpoint is the truth; the ledger is checked against it.
"""


CONNECTOR_FETCH_DESCRIPTION = """\
Resolve org.apache.spark:spark-sql-kafka-0-10_2.13 at the installed pyspark's exact version,
with its runtime dependencies, using mvn (its own settings: ~/.m2/settings.xml for mirrors
and proxies), into a per-user cache ($JAR_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, then
pyspark-kafka-upgrade/jars).
A run with kafka.connector = "builtin" does this by itself on first use; this command does it
ahead of time and prints the jars Spark does not already ship, for spark-submit --jars or
SPARK_KAFKA_JARS on a machine without Maven.
"""


PROGRESS_EXAMPLE = (
    "batch 12  aggregates  input rows 1,204  rows written 6  malformed 3  "
    "watermark 2026-11-22T10:05:00Z  lag 40  2.1 s"
)
RUN_DESCRIPTION = f"""\
Run the pipeline's current generation: Kafka -> windowed aggregates (append mode) into the
generation's output directory, malformed records into its quarantine directory, and one
ledger record per committed batch. Prints one line per batch:

  {PROGRESS_EXAMPLE}

input rows: the Kafka records the batch read; rows written: the rows it appended to the
output (windows the watermark closed, one row per window and key); malformed: the records
among the input that are not valid events, which the quarantine query writes.

Ctrl-C or SIGTERM stops it cleanly: the batch in flight finishes and commits first. A second
Ctrl-C stops at once (still safe: the checkpoint restarts the batch).
A second run on the same generation is refused while the first one is alive.
"""


def parse_args(project: Project, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; ``config`` and ``overrides`` then hold every level's options."""
    parser = build_parser(project)
    args = parser.parse_args(argv)
    try:
        _merge_settings_options(args)
        # A command's set_defaults(check=...) refuses combinations argparse cannot express.
        check: Callable[[argparse.Namespace], None] | None = getattr(args, "check", None)
        if check is not None:
            check(args)
    except _UsageError as error:
        # One line, like every other error here; argparse's usage block would bury it.
        parser.exit(2, f"{project.command}: error: {error}\n")
    return args


def _merge_settings_options(args: argparse.Namespace) -> None:
    # A parser only sees the arguments before its subcommand's name, so ordering the levels by
    # depth is command-line order, which --set relies on: the later one for a key wins.
    configs: list[Path] = _pop_levels(args, "config")
    overrides: list[str] = _pop_levels(args, "overrides")
    different = {path.resolve(): path for path in configs}
    if len(different) > 1:
        first, second = list(different.values())[:2]
        raise _UsageError(f"--config given twice, {first} and {second}: give one file")
    args.config = configs[0] if configs else None
    args.overrides = overrides


def _pop_levels(args: argparse.Namespace, name: str) -> list[Any]:
    levels: dict[int, list[Any]] = {}
    for dest in list(vars(args)):
        base, separator, depth = dest.partition(_LEVEL_SEPARATOR)
        if separator and base == name:
            levels[int(depth)] = getattr(args, dest)
            delattr(args, dest)
    return [value for depth in sorted(levels) for value in levels[depth]]


def _check_upgrade_apply(args: argparse.Namespace) -> None:
    given = {"--accept-data-loss": args.accept_data_loss, "--no-scan": args.no_scan}
    fixed = " and ".join(option for option, on in given.items() if on)
    if args.plan is not None and fixed:
        raise _UsageError(
            f"upgrade apply {args.plan}: the plan file already fixed {fixed}; choose when "
            "planning (`upgrade plan --out`), or apply without a plan file"
        )


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
        out=args.out,
        plot=args.plot,
    )


def _upgrade_apply(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return upgrade.apply_command(
        loaded.settings,
        plan_file=args.plan,
        accept_data_loss=args.accept_data_loss,
        scan=not args.no_scan,
    )


def _upgrade_show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return upgrade.show_command(loaded.settings, args.plan, as_json=args.json, plot=args.plot)


def _upgrade_rollback(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    return upgrade.rollback_command(loaded.settings)


def _instant(text: str) -> int:
    try:
        return parse_instant(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _check_verify(args: argparse.Namespace) -> None:
    if args.from_time is not None and args.to_time is not None and args.from_time >= args.to_time:
        raise _UsageError("verify: --from must be before --to: the range holds no window")


def _verify(args: argparse.Namespace, loaded: LoadedSettings) -> Outcome:
    scope = verifying.VerifyRange(
        from_ms=args.from_time,
        to_ms=args.to_time,
        generations=None if args.generation is None else tuple(args.generation),
    )
    return verifying.verify_command(loaded.settings, scope, as_json=args.json, master=args.master)


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


def console(project: Project) -> NoReturn:
    """A project's console script: exit with :func:`main`'s code.

    It raises rather than returns because some launchers ignore a return value: Databricks'
    python_wheel_task calls the entry point and would report a refused command as a success.
    """
    raise SystemExit(main(project))


def main(project: Project, argv: Sequence[str] | None = None) -> int:
    """Run one command of ``project``'s CLI; the exit code."""
    prog = project.command
    args = parse_args(project, argv)
    try:
        loaded = configuration.load(project, args.config, args.overrides)
        for warning in loaded.warnings:
            print(f"{prog}: warning: {warning}", file=sys.stderr)
        result = args.handler(args, loaded)
        if isinstance(result, Outcome):
            print(result.text)
            return result.exit_code
        print(result)
        return 0
    except BrokenPipeError:
        # The reader went away (`config show | head`): not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stays open until exit
        return 0
    except PipelineError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return error.exit_code
    except InvalidValueError as error:
        # A setting that passed its own checks but does not fit the job (e.g. a grouping key
        # the event schema lacks), found when the job is planned.
        print(f"{prog}: error: {error}", file=sys.stderr)
        return ConfigError.exit_code
    except (PySparkException, Py4JError) as error:
        # Py4JJavaError: the Java exceptions PySpark does not convert (SparkException among
        # them) would otherwise end the command with pages of Java and Python stack.
        print(f"{prog}: error: Spark: {cause(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
