"""``verify``: nothing lost or written twice, proven on the pipeline's own data."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._usage import UsageError

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings
    from pyspark_kafka_upgrade._domain.values.outcome import Outcome


def check(args: argparse.Namespace) -> None:
    if args.from_time is not None and args.to_time is not None and args.from_time >= args.to_time:
        raise UsageError("verify: --from must be before --to: the range holds no window")


def verify(args: argparse.Namespace, loaded: LoadedSettings) -> Outcome:
    from pyspark_kafka_upgrade._application import verify as use_case

    scope = use_case.VerifyRange(
        from_ms=args.from_time,
        to_ms=args.to_time,
        generations=None if args.generation is None else tuple(args.generation),
    )
    return use_case.verify_command(loaded.settings, scope, as_json=args.json, master=args.master)
