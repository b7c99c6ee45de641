"""``verify``: nothing lost or written twice, proven on the pipeline's own data."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._usage import (
    Commands,
    UsageError,
    add_generation,
    add_json,
    add_master,
)

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings
    from pyspark_kafka_upgrade._domain.values.outcome import Outcome

DESCRIPTION = """\
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


def add_verify(commands: Commands) -> None:
    verify = commands.add(
        "verify",
        help="prove nothing was lost or written twice, on the pipeline's own data",
        description=DESCRIPTION,
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
    add_generation(verify, "only the windows these generations own or wrote", many=True)
    add_json(verify, "the report")
    add_master(verify, metavar=None)
    verify.set_defaults(handler=_verify, check=_check)


def _instant(text: str) -> int:
    from pyspark_kafka_upgrade._domain.values.time_text import parse_instant

    try:
        return parse_instant(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _check(args: argparse.Namespace) -> None:
    if args.from_time is not None and args.to_time is not None and args.from_time >= args.to_time:
        raise UsageError("verify: --from must be before --to: the range holds no window")


def _verify(args: argparse.Namespace, loaded: LoadedSettings) -> Outcome:
    from pyspark_kafka_upgrade._application import verify

    scope = verify.VerifyRange(
        from_ms=args.from_time,
        to_ms=args.to_time,
        generations=None if args.generation is None else tuple(args.generation),
    )
    return verify.verify_command(loaded.settings, scope, as_json=args.json, master=args.master)
