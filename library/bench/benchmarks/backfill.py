"""Records per second of `upgrade backfill` ÷ the streaming job's own, and its memory over its
range.

One topic of valid page views (event times in order, 100 ms apart: nothing late), per
connector, the order alternating round by round, in the run's shared session:

  streaming  version 1 (``views = count(*)``) `run` (Trigger.AvailableNow) over the whole
             topic, in a fresh pipeline of its own, in a few batches, each in the ledger;
  upgrade    `upgrade apply` to version 2, which adds ``users``, ``first_user`` and
             ``last_user``, and its `run`, which rebuilds the windows still open and commits
             them (untimed: the backfill needs the current generation to have committed);
  backfill   `upgrade backfill` of the last quarter of the range, on a copy of the
             pipeline, then of the whole range (from below the first event) on the pipeline.

Throughput: the records the backfill read ÷ its wall seconds; the figure divides the whole
range's by the streaming job's. Memory: as verify's benchmark, the driver JVM's used heap
plus this process's RSS after a GC of both, sampled on a thread; the figure divides the
whole range's peak by the quarter's. Quick: the first connector only, one round (the
command is the same for both; the full run measures both, three rounds).

Checked: the streaming job read every record; the whole backfill read every record and
rewrote every window generation 1 wrote (counted from the events: windows ending at or
before the last event's time less the watermark delay); after it, a reader of the output
finds no window of generation 1 without the new metrics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import functions as F

from bench.kit import runs, topics
from bench.kit.context import Benchmark, Connector, Context, Result
from bench.kit.processes import MIB
from bench.kit.runs import driver_peak, stream
from bench.kit.timing import side_by_side
from bench.record import Figure
from pyspark_kafka_upgrade._adapters.sink.reading import read_output
from pyspark_kafka_upgrade._application.backfill import BackfillRequest, backfill
from pyspark_kafka_upgrade._application.upgrade.commands import apply_command
from pyspark_kafka_upgrade._core.settings import Settings
from support import pipelines
from support.proofs import METRICS_ADDED, copy_of

ARTICLES = [f"a{n}" for n in range(1, 21)]
LABELS: dict[Connector, str] = {"python": "pykafka", "builtin": "builtin"}
WINDOW_MS = 10 * pipelines.MINUTE_MS  # pipeline_settings' window.duration
DELAY_MS = 5 * pipelines.MINUTE_MS  # and its window.watermark_delay
PARTITIONS = 2
QUARTER = 0.25
TIMEOUT_S = 1800
NEW_METRICS = ("users", "first_user", "last_user")


@dataclass(frozen=True)
class Topic:
    name: str
    records: int
    batches: int

    @property
    def last_ms(self) -> int:
        return pipelines.BASE_MS + (self.records - 1) * topics.EVENT_STEP_MS

    @property
    def written_by_generation_1(self) -> int:
        """Windows generation 1 wrote: those ending at or before its final watermark."""
        return (self.last_ms - DELAY_MS - pipelines.BASE_MS) // WINDOW_MS


@dataclass
class Measured:
    """One connector's side of one round."""

    stream_rate: float = 0.0  # records/s
    backfill_rate: float = 0.0
    whole_mib: float = 0.0  # the driver's peak memory backfilling the whole range
    quarter_mib: float = 0.0
    quarter_read: int = 0


def run(ctx: Context) -> Result:
    records, batches = ctx.size(20_000, 200_000), ctx.size(4, 10)
    connectors = ctx.size(ctx.connectors[:1], ctx.connectors)
    topic = Topic(
        topics.page_view_topic(
            ctx.bootstrap, "bench-backfill", records, PARTITIONS, ARTICLES, ctx.say
        ),
        records,
        batches,
    )
    problems: list[str] = []
    counter = iter(range(1_000_000))
    ctx.spark  # noqa: B018  # started now, so that no timed run pays for its start
    rounds: dict[Connector, list[Measured]] = {c: [] for c in connectors}

    def side(connector: Connector) -> Callable[[], float]:
        def once() -> float:
            name = f"{LABELS[connector]}_{next(counter)}"
            rounds[connector].append(measure(ctx, topic, connector, name, problems))
            return rounds[connector][-1].backfill_rate

        return once

    side_by_side({c: side(c) for c in connectors}, ctx.size(1, 3), warmup=0, say=ctx.say)
    figures = [throughput_figure(connector, rounds[connector]) for connector in connectors]
    figures.append(memory_figure(rounds))
    sizes = {
        "records": records,
        "batches": batches,
        "windows of generation 1": topic.written_by_generation_1,
        "records in the quarter": rounds[connectors[0]][-1].quarter_read,
    }
    return Result(tuple(figures), tuple(problems), sizes)


def measure(
    ctx: Context, topic: Topic, connector: Connector, name: str, problems: list[str]
) -> Measured:
    """Stream the topic into a new pipeline, upgrade it, then backfill a quarter and the whole."""
    directory = ctx.workdir / topic.name / name
    overrides = (
        f"pipeline.name={topic.name}-{name}",
        f"kafka.connector={connector}",
        # Batches with event times of their own, as the stream's history has.
        f"kafka.max_offsets_per_trigger={-(-topic.records // topic.batches)}",
    )
    version_1 = pipelines.pipeline_settings(directory, ctx.bootstrap, topic.name, *overrides)
    version_2 = pipelines.pipeline_settings(
        directory, ctx.bootstrap, topic.name, *overrides, METRICS_ADDED
    )
    done = Measured()
    seconds, read = stream(ctx.spark, version_1, TIMEOUT_S)
    if read != topic.records:
        problems.append(f"{name}: the streaming job read {read:,} records, not {topic.records:,}")
    done.stream_rate = read / seconds
    ctx.say(f"{name}: streaming {seconds:.1f} s, {done.stream_rate:,.0f} records/s")
    apply_command(version_2, accept_data_loss=False, spark=lambda: ctx.spark)
    stream(ctx.spark, version_2, TIMEOUT_S)

    cut = topic.last_ms - int(QUARTER * (topic.last_ms - pipelines.BASE_MS))
    quarter = copy_of(version_2, Path(f"{directory}-quarter"))
    seconds, read, peak_mib, _ = timed_backfill(ctx, quarter, cut - cut % WINDOW_MS)
    done.quarter_mib, done.quarter_read = peak_mib, read
    ctx.say(f"{name}: backfill quarter {seconds:.1f} s, {read:,} records, peak {peak_mib:,.0f} MiB")

    # From below the first event, the whole range holds every window.
    seconds, read, peak_mib, windows = timed_backfill(ctx, version_2, pipelines.BASE_MS - WINDOW_MS)
    done.whole_mib, done.backfill_rate = peak_mib, read / seconds
    ctx.say(f"{name}: backfill whole {seconds:.1f} s, {read:,} records, peak {peak_mib:,.0f} MiB")
    if read != topic.records:
        problems.append(f"{name}: the backfill read {read:,} records, not {topic.records:,}")
    if windows != topic.written_by_generation_1:
        problems.append(
            f"{name}: the backfill rewrote {windows} windows, generation 1 wrote "
            f"{topic.written_by_generation_1}"
        )
    lacking = without_new_metrics(ctx, version_2, topic)
    if lacking:
        problems.append(f"{name}: {lacking} rows of generation 1 still lack the new metrics")
    return done


def timed_backfill(ctx: Context, settings: Settings, from_ms: int) -> tuple[float, int, float, int]:
    """`upgrade backfill` from ``from_ms``: wall seconds, records read, the driver's peak
    memory in MiB, windows rewritten."""
    context = ctx.spark.sparkContext
    tag = f"bench-backfill-{settings.pipeline.name}-{from_ms}"
    context.addJobTag(tag)
    deadline = threading.Timer(TIMEOUT_S, context.cancelJobsWithTag, (tag,))
    deadline.start()
    try:
        with driver_peak(context._jvm) as peak:
            started = time.perf_counter()
            report = backfill(settings, BackfillRequest(from_ms=from_ms), spark=ctx.spark)
            seconds = time.perf_counter() - started
    finally:
        deadline.cancel()
        context.removeJobTag(tag)
    return seconds, report.records, peak.bytes / MIB, report.windows or 0


def without_new_metrics(ctx: Context, settings: Settings, topic: Topic) -> int:
    """Rows a reader sees in generation 1's windows with a new metric null."""
    rows = read_output(ctx.spark, settings.pipeline.root, file_format=settings.sink.format)
    last_end = pipelines.BASE_MS + topic.written_by_generation_1 * WINDOW_MS
    lacking = F.lit(False)
    for name in NEW_METRICS:
        lacking = lacking | F.col(name).isNull()
    written = F.col("window_end") <= F.timestamp_millis(F.lit(last_end))
    return rows.where(written & lacking).count()


def throughput_figure(connector: Connector, measured: list[Measured]) -> Figure:
    return runs.throughput_figure(
        "backfill",
        LABELS[connector],
        [m.backfill_rate for m in measured],
        [m.stream_rate for m in measured],
    )


def memory_figure(rounds: dict[Connector, list[Measured]]) -> Figure:
    """Every connector's rounds in one series: memory must stay flat whichever reads."""
    measured = [m for connector in rounds for m in rounds[connector]]
    return runs.memory_figure(
        "backfill", [m.whole_mib for m in measured], [m.quarter_mib for m in measured]
    )


BENCHMARK = Benchmark(
    "backfill", "upgrade backfill records/s ÷ the streaming job's, and its memory", run
)
