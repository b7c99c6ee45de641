"""``upgrade plan``, ``apply``, ``show`` and ``rollback``: onto a new checkpoint and back;
``backfill``: the windows already written, with the current query's values.

Their words and arguments are in commands.toml."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TypedDict

from pyspark_kafka_upgrade.cli._usage import UsageError

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings
    from pyspark_kafka_upgrade._domain.values.outcome import Outcome


def check_apply(args: argparse.Namespace) -> None:
    given = {
        "--accept-data-loss": args.accept_data_loss,
        "--no-scan": args.no_scan,
        "--handoff-at": args.handoff_at is not None,
    }
    fixed = " and ".join(option for option, on in given.items() if on)
    if args.plan is not None and fixed:
        raise UsageError(
            f"upgrade apply {args.plan}: the plan file already fixed {fixed}; choose when "
            "planning (`upgrade plan --out`), or apply without a plan file"
        )


def plan(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.upgrade import commands

    return commands.plan_command(
        loaded.settings, as_json=args.json, out=args.out, plot=args.plot, **_planning(args)
    )


def apply(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.upgrade import commands

    return commands.apply_command(loaded.settings, plan_file=args.plan, **_planning(args))


class _Planning(TypedDict):
    accept_data_loss: bool
    scan: bool
    handoff_at_ms: int | None


def _planning(args: argparse.Namespace) -> _Planning:
    """--accept-data-loss, --no-scan and --handoff-at, which plan and apply (without a plan
    file) share."""
    return {
        "accept_data_loss": args.accept_data_loss,
        "scan": not args.no_scan,
        "handoff_at_ms": args.handoff_at,
    }


def show(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.upgrade import commands

    return commands.show_command(loaded.settings, args.plan, as_json=args.json, plot=args.plot)


def rollback(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.upgrade import commands

    return commands.rollback_command(loaded.settings)


def check_backfill(args: argparse.Namespace) -> None:
    if args.from_time is not None and args.to_time is not None and args.from_time >= args.to_time:
        raise UsageError("upgrade backfill: --from must be before --to: the range holds no window")


def backfill(args: argparse.Namespace, loaded: LoadedSettings) -> Outcome:
    from pyspark_kafka_upgrade._application import backfill as use_case

    request = use_case.BackfillRequest(
        from_ms=args.from_time, to_ms=args.to_time, plan_only=args.plan_only
    )
    return use_case.backfill_command(
        loaded.settings, request, as_json=args.json, master=args.master
    )
