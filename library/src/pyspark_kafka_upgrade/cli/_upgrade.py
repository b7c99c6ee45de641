"""``upgrade plan``, ``apply``, ``show`` and ``rollback``: onto a new checkpoint and back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._usage import Commands, UsageError, add_json

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings

DESCRIPTION = """\
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

PLAN_DESCRIPTION = """\
Compare the pipeline the current checkpoint was written with against the current code and
settings. When the checkpoint cannot carry the change, compute where each partition restarts
and explain why. Changes nothing; --out also writes the plan to a file, to review and then
apply exactly as reviewed.
"""

APPLY_DESCRIPTION = """\
Apply the upgrade: record the plan as generation N+1, retire generation N (its checkpoint and
output stay untouched), and leave generation N+1 for `run` to start. Safe to run again after a
crash at any point.

With PLAN, apply exactly that plan file, the one `upgrade plan --out` wrote and you reviewed;
if the pipeline moved since it was planned, refuse and change nothing. Without PLAN, plan and
apply in one step, printing the plan first. --accept-data-loss and --no-scan only work without
PLAN: a plan file already fixed them when it was planned.
"""

SHOW_DESCRIPTION = """\
Print a plan file `upgrade plan --out` wrote: what changed, where each partition restarts and
why. Changes nothing.
"""

ROLLBACK_DESCRIPTION = """\
Undo an applied upgrade whose generation has not committed a batch yet.
"""


def add_upgrade(commands: Commands) -> None:
    upgrade = commands.add(
        "upgrade",
        help="move the pipeline onto a new checkpoint without losing or repeating a window",
        description=DESCRIPTION,
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
    below = commands.below(upgrade, dest="upgrade_command")
    _add_plan(below)
    _add_apply(below)
    _add_show(below)
    _add_rollback(below)


def _add_plan(commands: Commands) -> None:
    plan = commands.add(
        "plan",
        help="say whether the change needs a new checkpoint and, if so, where it restarts",
        description=PLAN_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} upgrade plan --out upgrade.json --plot upgrade.png",
            "{prog} upgrade show upgrade.json      # review it",
            "{prog} upgrade apply upgrade.json     # that plan, or refuses if anything moved",
        ],
    )
    add_json(plan, "the advice and plan")
    plan.add_argument(
        "--out",
        type=Path,
        metavar="PLAN",
        help="also write the plan to this file, to review with `upgrade show PLAN` and apply "
        "with `upgrade apply PLAN`",
    )
    _add_plot(plan)
    _add_planning_options(plan)
    plan.set_defaults(handler=_plan)


def _add_apply(commands: Commands) -> None:
    apply = commands.add(
        "apply",
        help="record the plan as the next generation and retire the current one",
        description=APPLY_DESCRIPTION,
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
    apply.set_defaults(handler=_apply, check=_check_apply)


def _add_show(commands: Commands) -> None:
    show = commands.add(
        "show",
        help="print a plan file `upgrade plan --out` wrote; changes nothing",
        description=SHOW_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} upgrade plan --out upgrade.json",
            "{prog} upgrade show upgrade.json --plot upgrade.svg",
        ],
    )
    show.add_argument("plan", type=Path, metavar="PLAN", help="the plan file")
    add_json(show, "the plan")
    _add_plot(show)
    show.set_defaults(handler=_show)


def _add_rollback(commands: Commands) -> None:
    rollback = commands.add(
        "rollback",
        help="return to the previous generation, if the new one has not committed a batch",
        description=ROLLBACK_DESCRIPTION,
        raw=True,
        examples=[
            "{prog} upgrade apply upgrade.json",
            "{prog} upgrade rollback               # before generation N+1 commits a batch",
        ],
    )
    rollback.set_defaults(handler=_rollback)


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


def _add_plot(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="also draw the plan to FILE (.png or .svg): per partition, its batches by offset "
        "and event time, W, the open windows, the restart offset and the records to replay "
        "(needs the plot extra: pip install 'pyspark-kafka-upgrade[plot]')",
    )


def _check_apply(args: argparse.Namespace) -> None:
    given = {"--accept-data-loss": args.accept_data_loss, "--no-scan": args.no_scan}
    fixed = " and ".join(option for option, on in given.items() if on)
    if args.plan is not None and fixed:
        raise UsageError(
            f"upgrade apply {args.plan}: the plan file already fixed {fixed}; choose when "
            "planning (`upgrade plan --out`), or apply without a plan file"
        )


def _plan(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.upgrade import commands

    return commands.plan_command(
        loaded.settings,
        as_json=args.json,
        accept_data_loss=args.accept_data_loss,
        scan=not args.no_scan,
        out=args.out,
        plot=args.plot,
    )


def _apply(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.upgrade import commands

    return commands.apply_command(
        loaded.settings,
        plan_file=args.plan,
        accept_data_loss=args.accept_data_loss,
        scan=not args.no_scan,
    )


def _show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.upgrade import commands

    return commands.show_command(loaded.settings, args.plan, as_json=args.json, plot=args.plot)


def _rollback(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.upgrade import commands

    return commands.rollback_command(loaded.settings)
