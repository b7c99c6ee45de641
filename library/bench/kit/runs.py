"""A pipeline's `run` to the end of its topic in the run's shared session, the driver's peak
memory around a job, and the two figures made of them: what the benchmarks of commands that
read a range (`verify`, `upgrade backfill`) measure."""

from __future__ import annotations

import gc
import sys
import threading
import time
from contextlib import AbstractContextManager, redirect_stdout
from typing import Any

import psutil
from pyspark.sql import SparkSession

from bench.kit.processes import Peak, peak_of
from bench.kit.timing import ratios
from bench.record import Figure, Series, Target
from pyspark_kafka_upgrade._application.run.queries import AGGREGATES_QUERY
from pyspark_kafka_upgrade._application.run.run_command import RunRequest, run_pipeline
from pyspark_kafka_upgrade._core.settings import Settings

SAMPLE_EVERY_S = 0.1


def stream(spark: SparkSession, settings: Settings, timeout_s: float) -> tuple[float, int]:
    """`run` until caught up; its wall seconds and the records its aggregates query read."""
    request = RunRequest(settings=settings, available_now=True, echo=lambda line: None)
    # The deadline asks the run to stop after the batches in flight, as Ctrl-C would.
    deadline = threading.Timer(timeout_s, request.stop.set)
    deadline.start()
    started = time.perf_counter()
    try:
        # The table keeps stdout to itself.
        with redirect_stdout(sys.stderr):
            summary = run_pipeline(request, spark)
    finally:
        deadline.cancel()
    seconds = time.perf_counter() - started
    if request.stop.is_set():
        raise TimeoutError(f"{settings.pipeline.name}: streaming did not finish in {timeout_s} s")
    progress = summary.progress.get(AGGREGATES_QUERY, [])
    return seconds, sum(int(p["numInputRows"]) for p in progress)


def driver_peak(jvm: Any) -> AbstractContextManager[Peak]:
    """After a GC of both heaps, the peak of the JVM's used heap + this process's RSS."""
    runtime = jvm.java.lang.Runtime.getRuntime()
    me = psutil.Process()
    gc.collect()
    jvm.java.lang.System.gc()

    def used() -> int:
        heap = int(runtime.totalMemory()) - int(runtime.freeMemory())
        return heap + int(me.memory_info().rss)

    return peak_of(used, SAMPLE_EVERY_S)


def throughput_figure(
    command: str, label: str, rates: list[float], stream_rates: list[float]
) -> Figure:
    """``command``'s records/s over the whole range ÷ the streaming job's, round by round."""
    return Figure(
        f"{command}.throughput.{label}",
        f"records/s, {command} of the whole range ÷ the streaming job ({label})",
        ratios(rates, stream_rates),
        Target(">=", 1.0),
        {
            command: Series(tuple(rates), "records/s"),
            "streaming": Series(tuple(stream_rates), "records/s"),
        },
    )


def memory_figure(command: str, whole: list[float], quarter: list[float]) -> Figure:
    """``command``'s driver peak over the whole range ÷ over its last quarter: flat, or not."""
    return Figure(
        f"{command}.memory",
        f"driver peak heap + Python RSS, {command} of the whole range ÷ its last quarter",
        ratios(whole, quarter),
        Target("<=", 1.2),
        {"whole range": Series(tuple(whole), "MiB"), "last quarter": Series(tuple(quarter), "MiB")},
    )
