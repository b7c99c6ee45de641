"""``run``: the pipeline's current generation, until stopped."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._core.settings import LoadedSettings


def run(args: argparse.Namespace, loaded: LoadedSettings) -> str:
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
