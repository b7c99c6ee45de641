"""Batch time of the windowed job with the offset ledger ÷ without it, per store.

The same topic, read in the same batches (maxOffsetsPerTrigger, Trigger.AvailableNow, a
fresh checkpoint per run), as a plain job and as the pipeline runs it: batch metrics
observed and every batch recorded by the ledger listener in a store of each kind. A round
runs every side, in alternating order; its ratio divides the median batch time
(Spark's triggerExecution) with a store by the plain job's. Checked: each ledger holds
every batch the query ran.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable

from bench.kit import spark, topics
from bench.kit.context import Benchmark, Context, Result
from bench.kit.timing import ratios, side_by_side
from bench.record import Figure, Series, Target
from pyspark_kafka_upgrade._adapters.ledger.opening import open_store
from pyspark_kafka_upgrade._adapters.spark.listener import LedgerListener
from pyspark_kafka_upgrade._application.run.queries import METRICS
from pyspark_kafka_upgrade._core.settings import Settings, load_settings
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._ledgers import DEFAULT_POSTGRES_DSN, POSTGRES_DSN_ENV
from support import pipelines

TIMEOUT_S = 1800
LEDGER_WAIT_S = 30


def run(ctx: Context) -> Result:
    records, batches = ctx.size(20_000, 200_000), ctx.size(4, 10)
    topic = topics.page_view_topic(ctx.bootstrap, "bench-ledger", records, 2, ["a1", "a2"], ctx.say)
    settings = pipelines.pipeline_settings(
        ctx.workdir / topic,
        ctx.bootstrap,
        topic,
        f"kafka.connector={ctx.connectors[0]}",
        f"kafka.max_offsets_per_trigger={-(-records // batches)}",
    )
    problems: list[str] = []
    stores = {"sqlite": str(ctx.workdir / topic / "ledger.sqlite")}
    stores["filesystem"] = str(ctx.workdir / topic / "ledger")
    dsn = os.environ.get(POSTGRES_DSN_ENV, DEFAULT_POSTGRES_DSN)
    unreachable = postgres_problem(dsn)
    if unreachable is None:
        stores["postgres"] = dsn
    else:
        # A machine without PostgreSQL still measures the others; CI has one, and must.
        ctx.say(f"postgres store left out: {unreachable}")
        if os.environ.get("CI"):
            problems.append(f"CI: the postgres store is unreachable at {dsn}: {unreachable}")
    counter = iter(range(1_000_000))

    def side(store: str | None) -> Callable[[], float]:
        def measure() -> float:
            name = f"{store or 'plain'}_{next(counter)}"
            return median_batch_s(
                ctx, settings, None if store is None else (store, stores[store]), name, problems
            )

        return measure

    sides = {"plain": side(None), **{store: side(store) for store in stores}}
    seconds = side_by_side(sides, ctx.size(1, 3), warmup=ctx.size(0, 1), say=ctx.say)
    figures = tuple(
        Figure(
            f"listener.{store}",
            f"batch time with the ledger ({store}) ÷ without",
            ratios(seconds[store], seconds["plain"]),
            Target("<=", 1.02),
            {
                "plain": Series(tuple(seconds["plain"]), "s"),
                store: Series(tuple(seconds[store]), "s"),
            },
        )
        for store in stores
    )
    return Result(figures, tuple(problems), {"records": records, "batches": batches})


def median_batch_s(
    ctx: Context,
    settings: Settings,
    store: tuple[str, str] | None,
    name: str,
    problems: list[str],
) -> float:
    """One run's median batch time; with a store, its ledger must hold every batch."""
    listener = None
    if store is not None:
        kind, location = store
        ledger = load_settings(
            PROJECT,
            env={},
            overrides=[f"ledger.store={kind}", f"ledger.location={location}"],
        ).settings.ledger
        opened = open_store(ledger, spark=lambda: ctx.spark)
        listener = LedgerListener(
            opened, pipeline=name, generation=1, query_name=name, metrics=METRICS
        )
        ctx.spark.streams.addListener(listener)
    try:
        job = spark.run_windowed_job(
            ctx.spark, settings, ctx.workdir, name, observed=store is not None, timeout_s=TIMEOUT_S
        )
        if listener is not None:
            # The listener hears of a batch after it commits: wait, then count.
            listener.wait_for_batch(int(job.progress[-1]["batchId"]), LEDGER_WAIT_S)
            recorded = len(opened.batches(name, 1))
            if recorded != len(job.progress):
                ran = len(job.progress)
                problems.append(f"{name}: the ledger holds {recorded} batches, the query ran {ran}")
    finally:
        if listener is not None:
            ctx.spark.streams.removeListener(listener)
            opened.close()
    return statistics.median(job.batch_seconds(with_input_only=True))


def postgres_problem(dsn: str) -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed"
    try:
        with psycopg.connect(dsn, connect_timeout=5):
            return None
    except psycopg.Error as error:
        return str(error).strip().splitlines()[0]


BENCHMARK = Benchmark("listener", "batch time with the offset ledger ÷ without, per store", run)
