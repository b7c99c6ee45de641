"""A batch's time with the Delta sink ÷ with the parquet file sink: the same job, same data.

The pipeline's windowed job (parse, observe, watermark, 10-minute windows, append) over one
topic, read in the same batches (maxOffsetsPerTrigger, Trigger.AvailableNow, a fresh
checkpoint per run), into the sink the pipeline opens for ``sink.format``: parquet (a
directory and its ``_spark_metadata`` log) or delta (the one table, each batch a commit
through foreachBatch with the generation's transaction id). Both run in the run's one
Spark session, built with Delta's jars and extension, rounds alternating after a warm-up
(Delta's classes load with its first write). A run's batch time is the median of Spark's
``triggerExecution`` over its batches with input.

Beside the ratio, where the time goes: each sink's median ``addBatch``, and a Delta batch's
phases (``kit.sinks``: before the sink, the write, Delta's commit, after it; within the
write, the Spark jobs Delta ran itself) and the time of Delta's checkpoint (every 10
commits), told by the clocks the table's log and Spark's status store leave.

Checked: each run read every record; both sinks hold the same rows (the file sink's
committed files as its log names them, read with pyarrow; the table with delta-rs,
``DeltaTable(...).to_pyarrow_table()``), and not none.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from bench.kit import sinks, spark, topics
from bench.kit.context import Benchmark, Context, Result
from bench.kit.timing import ratios, side_by_side
from bench.record import Figure, Series, Target
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.records.sink import GENERATION
from support import pipelines

TIMEOUT_S = 1800
SINKS = ("parquet", "delta")


@dataclass(frozen=True)
class Measured:
    """One run of the job into one sink."""

    batch_s: float  # median triggerExecution
    add_batch_s: float  # median addBatch
    rows: list[sinks.Row]
    # The median time of the batch's own Spark job (the aggregation, writing the files).
    write_job_ms: float | None
    # Delta's only: its phases' medians and its checkpoints' times, in ms.
    phases_ms: dict[str, float]
    checkpoints_ms: list[float]


def run(ctx: Context) -> Result:
    records, batches = ctx.size(20_000, 200_000), ctx.size(4, 10)
    topic = topics.page_view_topic(ctx.bootstrap, "bench-sink", records, 2, ["a1", "a2"], ctx.say)

    def settings_of(sink_format: str) -> Settings:
        return pipelines.pipeline_settings(
            ctx.workdir / topic,
            ctx.bootstrap,
            topic,
            f"kafka.connector={ctx.connectors[0]}",
            f"kafka.max_offsets_per_trigger={-(-records // batches)}",
            f"sink.format={sink_format}",
        )

    problems: list[str] = []
    counter = iter(range(1_000_000))

    def side(sink_format: str) -> Callable[[], Measured]:
        settings = settings_of(sink_format)

        def measure() -> Measured:
            name = f"{sink_format}_{next(counter)}"
            started_ms = time.time() * 1000
            job = spark.run_windowed_job(
                ctx.spark, settings, ctx.workdir, name, observed=True, timeout_s=TIMEOUT_S
            )
            if job.input_rows != records:
                problems.append(f"{name} read {job.input_rows:,} records, expected {records:,}")
            measured = measure_run(job, sink_format, spark.jobs_since(ctx.spark, started_ms))
            job_ms = measured.write_job_ms
            ctx.say(
                f"{name}: batch {measured.batch_s:.3f} s, addBatch {measured.add_batch_s:.3f} s"
                + (f", write job {job_ms:.0f} ms" if job_ms is not None else "")
                + (f", {phases_line(measured.phases_ms)}" if measured.phases_ms else "")
            )
            return measured

        return measure

    measured = side_by_side(
        {name: side(name) for name in SINKS},
        ctx.size(1, 3),
        warmup=ctx.size(0, 1),
        say=ctx.say,
    )
    for parquet, delta in zip(measured["parquet"], measured["delta"], strict=True):
        if not parquet.rows:
            problems.append("the parquet sink wrote no rows: nothing was compared")
        found = sinks.difference(parquet.rows, delta.rows)
        if found is not None:
            problems.append(f"the parquet sink and the Delta table hold different rows: {found}")
    return Result(
        (figure(measured["parquet"], measured["delta"]),),
        tuple(problems),
        {"records": records, "batches": batches, "rounds": ctx.size(1, 3)},
    )


def figure(parquet: list[Measured], delta: list[Measured]) -> Figure:
    absolute = {
        "parquet": Series(tuple(m.batch_s for m in parquet), "s"),
        "delta": Series(tuple(m.batch_s for m in delta), "s"),
        "parquet addBatch": Series(tuple(m.add_batch_s for m in parquet), "s"),
        "delta addBatch": Series(tuple(m.add_batch_s for m in delta), "s"),
    }
    for name, runs in (("parquet", parquet), ("delta", delta)):
        jobs = tuple(m.write_job_ms for m in runs if m.write_job_ms is not None)
        if jobs:
            absolute[f"{name} write job"] = Series(jobs, "ms")
    for phase in (*sinks.PHASES, sinks.DELTA_JOBS):
        values = tuple(m.phases_ms[phase] for m in delta if phase in m.phases_ms)
        if values:
            absolute[f"delta {phase}"] = Series(values, "ms")
    checkpoints = tuple(ms for m in delta for ms in m.checkpoints_ms)
    if checkpoints:
        absolute["delta checkpoint"] = Series(checkpoints, "ms")
    return Figure(
        "sink.delta_over_parquet",
        "batch time: Delta sink ÷ parquet sink",
        ratios([m.batch_s for m in delta], [m.batch_s for m in parquet]),
        Target("<=", 1.2),
        absolute,
    )


def measure_run(job: spark.JobRun, sink_format: str, jobs: list[sinks.Job]) -> Measured:
    batch_s = statistics.median(job.batch_seconds(with_input_only=True))
    add_batch_s = sinks.median_duration_s(job.progress, "addBatch")
    if sink_format == "delta":
        from deltalake import DeltaTable

        commits = sinks.delta_commits(job.output)
        table = DeltaTable(str(job.output)).to_pyarrow_table()
        return Measured(
            batch_s,
            add_batch_s,
            sinks.rows_of(table, leave_out=(GENERATION,)),
            sinks.median_jobs_ms(job.progress, jobs),
            sinks.median_phases(job.progress, commits, jobs),
            sinks.checkpoint_ms(commits),
        )
    rows = sinks.rows_of(file_sink_rows(job.output))
    return Measured(batch_s, add_batch_s, rows, sinks.median_jobs_ms(job.progress, jobs), {}, [])


def file_sink_rows(directory: Path) -> pa.Table:
    """Generation 1's rows, from the files the sink's log names as committed."""
    output = open_sink("parquet", str(directory.parent.parent)).output(1)
    tables = [pq.read_table(local_path(path)) for path in output.files]
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="default")


def local_path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def phases_line(phases_ms: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.0f} ms" for name, value in phases_ms.items())


BENCHMARK = Benchmark(
    "sink", "batch time with the Delta sink ÷ with the parquet sink", run, needs_delta=True
)
