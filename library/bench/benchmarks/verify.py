"""Records per second of `verify` ÷ the streaming job's own, and verify's memory over its range.

One topic of valid page views (event times in order, 100 ms apart: nothing late), read by
each connector in turn, the order alternating round by round, in the run's shared session:

  streaming  `run` (run_pipeline, Trigger.AvailableNow) over the whole topic in a fresh
             pipeline of its own, in a few batches (kafka.max_offsets_per_trigger), each
             recorded in the ledger;
  verify     `verify` (verify_pipeline) of that pipeline over the windows of the last quarter
             of the range, then over the whole range (from below the first event).

Throughput: records ÷ wall seconds of each call, start and stop included; the figure divides
verify's on the whole range by the streaming job's. Memory: both heaps are collected before
each verify, then the JVM's used heap (Runtime total - free) plus this Python process's RSS
are sampled on a thread; the figure divides the whole range's peak by the quarter's. The
JVM's resident set is left out: it never shrinks in a session shared with other benchmarks.
In local mode the driver JVM is the executor too, so its heap also holds the tasks' buffers.
The quarter runs first, so that a peak left over from it cannot pass for the whole range's.
Full mode warms up both connectors untimed on a small topic first.

Checked: the streaming job read every record; each verify said OK; the whole-range verify
read every record.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.kit import runs, topics
from bench.kit.context import Benchmark, Connector, Context, Result
from bench.kit.processes import MIB
from bench.kit.runs import driver_peak, stream
from bench.kit.timing import side_by_side
from bench.record import Figure
from pyspark_kafka_upgrade._application.verify import VerifyRange, verify_pipeline
from pyspark_kafka_upgrade._core.reconciliation.verify_words import render_report
from pyspark_kafka_upgrade._core.settings import Settings
from support import pipelines

ARTICLES = [f"a{n}" for n in range(1, 21)]
LABELS: dict[Connector, str] = {"python": "pykafka", "builtin": "builtin"}
WINDOW_MS = 10 * pipelines.MINUTE_MS  # pipeline_settings' window.duration
PARTITIONS = 2
QUARTER = 0.25
WARMUP_RECORDS = 20_000
TIMEOUT_S = 1800


@dataclass(frozen=True)
class Topic:
    name: str
    records: int
    batches: int

    @property
    def last_ms(self) -> int:
        return pipelines.BASE_MS + (self.records - 1) * topics.EVENT_STEP_MS


@dataclass
class Measured:
    """One connector's side of one round."""

    stream_rate: float = 0.0  # records/s
    verify_rate: float = 0.0
    whole_mib: float = 0.0  # the driver's peak memory verifying the whole range
    quarter_mib: float = 0.0
    quarter_read: int = 0  # whole batches: verify reads every batch that feeds its windows


def run(ctx: Context) -> Result:
    records, batches = ctx.size(20_000, 200_000), ctx.size(4, 10)
    topic = Topic(fill(ctx, "bench-verify", records), records, batches)
    problems: list[str] = []
    counter = iter(range(1_000_000))
    ctx.spark  # noqa: B018  # started now, so that no timed run pays for its start
    if not ctx.quick:
        warm = Topic(fill(ctx, "bench-verify-warmup", WARMUP_RECORDS), WARMUP_RECORDS, batches)
        for connector in ctx.connectors:
            ctx.say(f"warm-up (untimed): {LABELS[connector]}")
            measure(ctx, warm, connector, f"warmup_{next(counter)}", problems)
    rounds: dict[Connector, list[Measured]] = {c: [] for c in ctx.connectors}

    def side(connector: Connector) -> Callable[[], float]:
        def once() -> float:
            name = f"{LABELS[connector]}_{next(counter)}"
            rounds[connector].append(measure(ctx, topic, connector, name, problems))
            return rounds[connector][-1].verify_rate

        return once

    side_by_side({c: side(c) for c in ctx.connectors}, ctx.size(1, 3), warmup=0, say=ctx.say)
    figures = [throughput_figure(connector, rounds[connector]) for connector in ctx.connectors]
    figures.append(memory_figure(rounds))
    quarter = rounds[ctx.connectors[0]][-1].quarter_read
    sizes = {"records": records, "batches": batches, "records in the quarter": quarter}
    return Result(tuple(figures), tuple(problems), sizes)


def fill(ctx: Context, prefix: str, records: int) -> str:
    return topics.page_view_topic(ctx.bootstrap, prefix, records, PARTITIONS, ARTICLES, ctx.say)


def measure(
    ctx: Context, topic: Topic, connector: Connector, name: str, problems: list[str]
) -> Measured:
    """Stream the topic into a new pipeline, then verify it: a quarter, then the whole range."""
    settings = pipelines.pipeline_settings(
        ctx.workdir / topic.name / name,
        ctx.bootstrap,
        topic.name,
        f"pipeline.name={topic.name}-{name}",
        f"kafka.connector={connector}",
        # Batches with event times of their own: verify skips those before its range.
        f"kafka.max_offsets_per_trigger={-(-topic.records // topic.batches)}",
    )
    done = Measured()
    seconds, read = stream(ctx.spark, settings, TIMEOUT_S)
    if read != topic.records:
        problems.append(
            f"{name}: the streaming job read {read:,} records, expected {topic.records:,}"
        )
    done.stream_rate = read / seconds
    ctx.say(f"{name}: streaming {seconds:.1f} s, {done.stream_rate:,.0f} records/s")
    cut = topic.last_ms - int(QUARTER * (topic.last_ms - pipelines.BASE_MS))
    # From below the first event, the whole range holds every window.
    starts = {"quarter": cut - cut % WINDOW_MS, "whole": pipelines.BASE_MS - WINDOW_MS}
    for part, from_ms in starts.items():
        seconds, read, peak_mib = verify(ctx, settings, from_ms, f"{name}: {part}", problems)
        ctx.say(
            f"{name}: verify {part} {seconds:.1f} s, {read:,} records, peak {peak_mib:,.0f} MiB"
        )
        if part == "quarter":
            done.quarter_mib, done.quarter_read = peak_mib, read
            continue
        done.whole_mib, done.verify_rate = peak_mib, read / seconds
        if read != topic.records:
            problems.append(
                f"{name}: verify read {read:,} records of the whole range, not {topic.records:,}"
            )
    return done


def verify(
    ctx: Context, settings: Settings, from_ms: int, what: str, problems: list[str]
) -> tuple[float, int, float]:
    """`verify` from ``from_ms``: wall seconds, records read, the driver's peak memory in MiB."""
    context = ctx.spark.sparkContext
    tag = f"bench-verify-{settings.pipeline.name}-{from_ms}"
    context.addJobTag(tag)
    deadline = threading.Timer(TIMEOUT_S, context.cancelJobsWithTag, (tag,))
    deadline.start()
    try:
        with driver_peak(context._jvm) as peak:
            started = time.perf_counter()
            report = verify_pipeline(settings, VerifyRange(from_ms=from_ms), spark=ctx.spark)
            seconds = time.perf_counter() - started
    finally:
        deadline.cancel()
        context.removeJobTag(tag)
    if not report.ok:
        ctx.say(render_report(report))
        windows = ", ".join(f"{n:,} {status}" for status, n in sorted(report.counts.items()))
        problems.append(f"{what}: verify did not say OK (windows: {windows})")
    return seconds, report.events_read, peak.bytes / MIB


def throughput_figure(connector: Connector, measured: list[Measured]) -> Figure:
    return runs.throughput_figure(
        "verify",
        LABELS[connector],
        [m.verify_rate for m in measured],
        [m.stream_rate for m in measured],
    )


def memory_figure(rounds: dict[Connector, list[Measured]]) -> Figure:
    """Every connector's rounds in one series: memory must stay flat whichever reads."""
    measured = [m for connector in rounds for m in rounds[connector]]
    return runs.memory_figure(
        "verify", [m.whole_mib for m in measured], [m.quarter_mib for m in measured]
    )


BENCHMARK = Benchmark("verify", "verify records/s ÷ the streaming job's, and its memory", run)
