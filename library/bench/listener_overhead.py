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
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The broker helpers live with the tests, the shared pieces in bench/: reused, not copied.
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

import bench.harness as harness  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import pyspark_kafka_upgrade.testing.kafka_backends as brokers  # noqa: E402
import support.pipelines as pipelines  # noqa: E402
from pyspark_kafka_upgrade.example.pipeline import PROJECT  # noqa: E402
from pyspark_kafka_upgrade.ledger.opening import (  # noqa: E402
    open_store,
)
from pyspark_kafka_upgrade.run.queries import (  # noqa: E402
    METRICS,
)
from pyspark_kafka_upgrade.settings import (  # noqa: E402
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade.spark.listener import (  # noqa: E402
    LedgerListener,
)

# A run has at most --batches batches and a no-data one; none may take this long.
_RUN_TIMEOUT_S = 1800


def run_once(
    spark: SparkSession, settings: Settings, workdir: Path, *, with_ledger: bool, name: str
) -> tuple[list[float], float]:
    """Batch durations (s) of one AvailableNow run, and its wall time."""
    listener = None
    store = None
    if with_ledger:
        ledger = load_settings(
            PROJECT, env={}, overrides=pipelines.ledger_overrides(workdir / name)
        ).settings.ledger
        store = open_store(ledger, spark=lambda: spark)
        listener = LedgerListener(
            store, pipeline=name, generation=1, query_name=name, metrics=METRICS
        )
        spark.streams.addListener(listener)
    run = harness.run_windowed_job(
        spark, settings, workdir, name, observed=with_ledger, timeout_s=_RUN_TIMEOUT_S
    )
    if listener is not None and store is not None:
        listener.wait_for_batch(int(run.progress[-1]["batchId"]), 30)
        recorded = len(store.batches(name, 1))
        spark.streams.removeListener(listener)
        store.close()
        if recorded != len(run.progress):
            raise SystemExit(
                f"the ledger holds {recorded} batches, the query ran {len(run.progress)}"
            )
    return run.batch_seconds(with_input_only=True), run.wall_s


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
        harness.fill_topic(
            bootstrap,
            topic,
            args.records,
            2,
            lambda indices: harness.page_views(indices, 2, ["a1", "a2", "a3"]),
        )
        settings = load_settings(
            PROJECT,
            env={},
            overrides=[
                f"kafka.bootstrap_servers={bootstrap}",
                f"kafka.topics={topic}",
                f"kafka.max_offsets_per_trigger={max(1, args.records // args.batches)}",
                "kafka.connector=python",
            ],
        ).settings
        spark = harness.start_spark(settings, "listener-overhead")
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
