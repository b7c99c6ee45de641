"""``run``: the pipeline's current generation, until stopped."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade.cli._usage import Commands, add_master

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings

PROGRESS_EXAMPLE = (
    "batch 12  aggregates  input rows 1,204  rows written 6  malformed 3  "
    "watermark 2026-11-22T10:05:00Z  lag 40  2.1 s"
)
DESCRIPTION = f"""\
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


def add_run(commands: Commands) -> None:
    run = commands.add(
        "run",
        help="run the pipeline's current generation until stopped",
        description=DESCRIPTION,
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
    add_master(run)
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace, loaded: LoadedSettings) -> str:
    from pyspark_kafka_upgrade._application.run import run_command

    stop = threading.Event()
    with _stop_on_signals(stop):
        return run_command.run(
            loaded, available_now=args.available_now, master=args.master, stop=stop
        )


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
