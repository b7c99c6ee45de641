"""A progress bar on stderr over a long Spark job, from the status tracker's task counts.

Spark's own console bar is off in commands (it would interleave with their output), so a
command that reads a long range shows its own: redrawn in place on a terminal, a line every
few seconds otherwise, nothing for a job that ends in under a few seconds.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from pyspark.sql import SparkSession

_FIRST_AFTER_S = 3.0
_EVERY_S = 0.5
_LINE_EVERY_S = 10.0
_WIDTH = 30


@contextmanager
def job_progress(
    spark: SparkSession, label: str, *, enabled: bool = True, out: TextIO | None = None
) -> Iterator[None]:
    """Show the progress of every job run inside the block, once it has run a few seconds."""
    if not enabled:
        yield
        return
    stream = out if out is not None else sys.stderr
    stop = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(spark, label, stream, stop), name=f"{label}-progress", daemon=True
    )
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(timeout=5)


def _watch(spark: SparkSession, label: str, out: TextIO, stop: threading.Event) -> None:
    tracker = spark.sparkContext.statusTracker()
    began = time.monotonic()
    interactive = out.isatty()
    last_line = 0.0
    drawn = False
    while not stop.wait(_EVERY_S):
        if time.monotonic() - began < _FIRST_AFTER_S:
            continue
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
                total += stage.numTasks
        if not total:
            continue
        filled = _WIDTH * done // total
        bar = f"{label}: [{'#' * filled}{'.' * (_WIDTH - filled)}] {done}/{total} tasks"
        if interactive:
            out.write("\r" + bar)
            drawn = True
        elif time.monotonic() - last_line >= _LINE_EVERY_S:
            out.write(bar + "\n")
            last_line = time.monotonic()
        out.flush()
    if drawn:
        out.write("\r" + " " * (_WIDTH + len(label) + 30) + "\r")
        out.flush()
