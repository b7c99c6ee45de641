"""Batch duration with the ledger (observe() metrics + the ledger listener) / without it.

Runs the windowed aggregation over the same topic twice per round, side by side: once as a
plain job, once as the pipeline runs it (batch metrics observed, every batch recorded in a
ledger of the project's store kind). Each run uses a fresh checkpoint, Trigger.AvailableNow and
maxOffsetsPerTrigger, so both see the same batches. Reports the median batch duration
(Spark's triggerExecution) of each and their ratio.

    python bench/listener_overhead.py --records 200000 --batches 10 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from pyspark.sql import DataFrame, SparkSession  # noqa: E402

import support.kafka_backends as brokers  # noqa: E402
import support.pipelines as pipelines  # noqa: E402
from {{ cookiecutter.package_name }} import (  # noqa: E402
    transformations,
)
from {{ cookiecutter.package_name }}.app.run import (  # noqa: E402
    METRICS,
)
from {{ cookiecutter.package_name }}.ledger.listener import (  # noqa: E402
    LedgerListener,
)
from {{ cookiecutter.package_name }}.ledger.opening import (  # noqa: E402
    open_store,
)
from {{ cookiecutter.package_name }}.settings import (  # noqa: E402
    Settings,
    load_settings,
)
from {{ cookiecutter.package_name }}.source.connector import (  # noqa: E402
    read_kafka_stream,
)
from {{ cookiecutter.package_name }}.spark_session import (  # noqa: E402
    build_spark_session,
)


def job(
    spark: SparkSession, settings: Settings, checkpoint: Path, *, with_ledger: bool
) -> DataFrame:
    raw = read_kafka_stream(
        spark, settings.kafka, initial_offsets_location=str(checkpoint / "sources" / "0" / "0")
    )
    parsed = transformations.parse_events(
        raw,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )
    if with_ledger:
        parsed = transformations.observe_batch_metrics(parsed)
    return transformations.windowed_aggregates(
        transformations.valid_events(parsed),
        window=settings.window.spec,
        keys=settings.aggregation.keys,
        metrics=settings.aggregation.metric_specs,
    )


def run_once(
    spark: SparkSession, settings: Settings, workdir: Path, *, with_ledger: bool, name: str
) -> tuple[list[float], float]:
    """Batch durations (s) of one AvailableNow run, and its wall time."""
    listener = None
    store = None
    if with_ledger:
        ledger = load_settings(
            env={}, overrides=pipelines.ledger_overrides(workdir / name)
        ).settings.ledger
        store = open_store(ledger, spark=lambda: spark)
        listener = LedgerListener(
            store, pipeline=name, generation=1, query_name=name, metrics=METRICS
        )
        spark.streams.addListener(listener)
    started = time.perf_counter()
    query = (
        job(spark, settings, workdir / name / "checkpoint", with_ledger=with_ledger)
        .writeStream.queryName(name)
        .format(settings.sink.format)
        .outputMode("append")
        .option("path", str(workdir / name / "out"))
        .option("checkpointLocation", str(workdir / name / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    wall = time.perf_counter() - started
    progress = query.recentProgress
    if listener is not None and store is not None:
        listener.wait_for_batch(int(progress[-1]["batchId"]), 30)
        recorded = len(store.batches(name, 1))
        spark.streams.removeListener(listener)
        store.close()
        if recorded != len(progress):
            raise SystemExit(f"the ledger holds {recorded} batches, the query ran {len(progress)}")
    durations = [p["durationMs"]["triggerExecution"] / 1000 for p in progress if p["numInputRows"]]
    return durations, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=200_000, help="events (200000)")
    parser.add_argument("--batches", type=int, default=10, help="batches per run (10)")
    parser.add_argument("--rounds", type=int, default=3, help="side-by-side rounds (3)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    with brokers.start_kafka_backend() as backend, tempfile.TemporaryDirectory() as tmp:
        bootstrap = backend.bootstrap_servers
        topic = brokers.unique_topic("bench-ledger")
        print(f"broker: {backend.name}; filling {topic} ...", file=sys.stderr)
        brokers.create_topic(bootstrap, topic, 2)
        chunk = 50_000
        for start in range(0, args.records, chunk):
            times = range(
                pipelines.BASE_MS + start * 100,
                pipelines.BASE_MS + min(start + chunk, args.records) * 100,
                100,
            )
            brokers.produce(
                bootstrap, topic, pipelines.page_views(["a1", "a2", "a3"], times, 2), timeout=120
            )
        settings = load_settings(
            env={},
            overrides=[
                f"kafka.bootstrap_servers={bootstrap}",
                f"kafka.topics={topic}",
                f"kafka.max_offsets_per_trigger={max(1, args.records // args.batches)}",
                "kafka.connector=python",
            ],
        ).settings
        spark = build_spark_session(
            settings,
            app_name="listener-overhead",
            master="local[2]",
            extra_conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
        )
        workdir = Path(tmp)
        # A warm-up of each, untimed: the first queries pay for JIT and worker start-up.
        run_once(spark, settings, workdir, with_ledger=False, name="warm_plain")
        run_once(spark, settings, workdir, with_ledger=True, name="warm_ledger")
        plain: list[float] = []
        ledger: list[float] = []
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds} ...", file=sys.stderr)
            plain += run_once(spark, settings, workdir, with_ledger=False, name=f"plain_{round_}")[
                0
            ]
            ledger += run_once(spark, settings, workdir, with_ledger=True, name=f"ledger_{round_}")[
                0
            ]
        spark.stop()

    result = {
        "batches": {"without ledger": len(plain), "with ledger": len(ledger)},
        "median batch s": {
            "without ledger": statistics.median(plain),
            "with ledger": statistics.median(ledger),
        },
        "mean batch s": {
            "without ledger": statistics.mean(plain),
            "with ledger": statistics.mean(ledger),
        },
        "ratio (median)": statistics.median(ledger) / statistics.median(plain),
        "ratio (mean)": statistics.mean(ledger) / statistics.mean(plain),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:<16} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
