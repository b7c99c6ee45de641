"""Records per second of the windowed job with the pykafka source / with the built-in connector.

One run: start (or reach) a broker, fill one topic with valid page views, start one Spark
session built for the built-in connector (its jars load only with the first SparkContext;
the pykafka source needs none, so it reads in the same session), then run the pipeline's
aggregates query (parse, observe, valid events, watermark, windows, append file sink) with
each connector over the whole topic: Trigger.AvailableNow, a fresh checkpoint per run.

After an untimed warm-up of each, whose outputs must match, the rounds alternate the order
(pykafka, builtin; builtin, pykafka; ...) so that neither always runs on a warmer JVM or a
fuller page cache. Reported, per connector, the median over the rounds:
  - wall: records / wall time of the whole query, start and stop included;
  - in batch: records / Spark's own triggerExecution time, summed over the batches;
and the ratio pykafka / builtin, with the target: pykafka >= 1.0x builtin. A table of
Spark's durationMs phases shows where each connector's batch time goes.

    python bench/connector_comparison.py --records 300000 --partitions 2 --rounds 3

The broker is chosen as in the tests (KAFKA_BACKEND, KAFKA_BOOTSTRAP_SERVERS); the built-in
connector's jars come from SPARK_KAFKA_JARS, else from Maven (resolved once, then cached).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).resolve().parent
# The broker helpers live with the tests, the shared pieces in bench/: reused, not copied.
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

import bench.harness as harness  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import pyspark_kafka_upgrade.testing.kafka_backends as brokers  # noqa: E402
import support.pipelines as pipelines  # noqa: E402
from pyspark_kafka_upgrade.errors import (  # noqa: E402
    PipelineError,
)
from pyspark_kafka_upgrade.query import columns  # noqa: E402
from pyspark_kafka_upgrade.settings import (  # noqa: E402
    Settings,
)

Connector = Literal["python", "builtin"]
LABELS: dict[Connector, str] = {"python": "pykafka", "builtin": "builtin"}
TARGET_RATIO = 1.0
ARTICLES = [f"a{n}" for n in range(1, 21)]
WALL_SPLIT = {
    "before": "start() to the first batch",
    "batches": "in batches (triggerExecution)",
    "after": "between batches, and stopping",
}
# The phases of durationMs worth a row; Spark reports a few more, all near zero here.
PHASES = ("latestOffset", "queryPlanning", "getBatch", "addBatch", "walCommit", "commitOffsets")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=300_000, help="page views (300000)")
    parser.add_argument("--partitions", type=int, default=2, help="topic partitions (2)")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs per connector (3)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds one query may take (900)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.records < 1 or args.partitions < 1 or args.rounds < 1:
        parser.error("--records, --partitions and --rounds must be at least 1")

    with brokers.start_kafka_backend() as backend, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        bootstrap = backend.bootstrap_servers
        topic = brokers.unique_topic("bench-source")
        say(f"broker: {backend.description}")
        say(f"filling {topic}: {args.records:,} page views in {args.partitions} partitions ...")
        harness.fill_topic(
            bootstrap,
            topic,
            args.records,
            args.partitions,
            lambda indices: harness.page_views(indices, args.partitions, ARTICLES),
        )
        settings = pipelines.pipeline_settings(workdir, bootstrap, topic)
        each: dict[Connector, Settings] = {
            connector: harness.with_connector(settings, connector) for connector in LABELS
        }
        say("starting Spark (local[2]) with the built-in connector's jars ...")
        spark = harness.start_spark(
            each["builtin"],
            "connector-comparison",
            shuffle_partitions=settings.pipeline.state_partitions,
        )
        try:
            runs = compare(spark, each, workdir, args.records, args.rounds, args.timeout)
        finally:
            spark.stop()
        broker = backend.description

    result = summarise(runs, args.records, args.partitions, args.rounds, broker)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def compare(
    spark: SparkSession,
    each: dict[Connector, Settings],
    workdir: Path,
    records: int,
    rounds: int,
    timeout_s: int,
) -> dict[Connector, list[harness.JobRun]]:
    """The timed runs of each connector, after a warm-up of each whose outputs must agree."""

    def run(connector: Connector, name: str) -> harness.JobRun:
        say(f"{name}: the windowed job with the {LABELS[connector]} source ...")
        done = harness.run_windowed_job(
            spark, each[connector], workdir, name, observed=True, timeout_s=timeout_s
        )
        check(done, records, name)
        say(f"{name}: {done.wall_s:.1f} s, {records / done.wall_s:,.0f} rec/s")
        return done

    # The first queries pay for JIT compilation and Python worker start-up.
    warm = {connector: run(connector, f"warm-up_{LABELS[connector]}") for connector in LABELS}
    same_output(spark, each["python"], warm["python"], warm["builtin"])
    runs: dict[Connector, list[harness.JobRun]] = {connector: [] for connector in LABELS}
    order: list[Connector] = ["python", "builtin"]
    for round_ in range(rounds):
        say(f"round {round_ + 1}/{rounds}")
        for connector in order if round_ % 2 == 0 else reversed(order):
            runs[connector].append(run(connector, f"round{round_ + 1}_{LABELS[connector]}"))
    return runs


def check(run: harness.JobRun, records: int, name: str) -> None:
    """Every record was read, and every one was a valid event that reached the aggregation."""
    if run.input_rows != records:
        raise SystemExit(f"{name} read {run.input_rows} records, expected {records}")
    malformed = run.observed(columns.MALFORMED_ROWS)
    if malformed:
        raise SystemExit(f"{name} found {malformed} malformed records; all should be valid")


def same_output(
    spark: SparkSession, settings: Settings, first: harness.JobRun, second: harness.JobRun
) -> None:
    """Both connectors wrote the same windows: same input, same job, same result."""
    outputs = [
        spark.read.format(settings.sink.format).load(str(run.output)) for run in (first, second)
    ]
    rows = [frame.sort(*frame.columns).collect() for frame in outputs]
    if rows[0] != rows[1]:
        raise SystemExit(f"the connectors' outputs differ ({len(rows[0])} and {len(rows[1])} rows)")
    # Append mode writes a window once the watermark passes its end: a topic spanning less
    # than a window and the watermark delay writes none, though every event was aggregated.
    say(f"outputs match: {len(rows[0])} window rows from each connector")


def summarise(
    runs: dict[Connector, list[harness.JobRun]],
    records: int,
    partitions: int,
    rounds: int,
    broker: str,
) -> dict[str, Any]:
    wall = {
        c: harness.Measurement(LABELS[c], "wall", records, [r.wall_s for r in runs[c]])
        for c in runs
    }
    in_batch = {
        c: harness.Measurement(
            LABELS[c],
            "in batch",
            records,
            [sum(r.batch_seconds(with_input_only=False)) for r in runs[c]],
        )
        for c in runs
    }
    ratio = wall["python"].median_rate / wall["builtin"].median_rate
    return {
        "records": records,
        "partitions": partitions,
        "rounds": rounds,
        "broker": broker,
        "versions": {name: version(name) for name in ("pyspark", "confluent-kafka", "pyarrow")},
        "rec_per_s": {
            LABELS[c]: {
                "wall_median": wall[c].median_rate,
                "wall_best": wall[c].best_rate,
                "in_batch_median": in_batch[c].median_rate,
            }
            for c in runs
        },
        "median_wall_s": {LABELS[c]: statistics.median(wall[c].seconds) for c in runs},
        "ratio_pykafka_to_builtin": {
            "wall": ratio,
            "in_batch": in_batch["python"].median_rate / in_batch["builtin"].median_rate,
        },
        "target": TARGET_RATIO,
        "target_met": ratio >= TARGET_RATIO,
        "median_wall_split_s": {
            LABELS[c]: {
                part: statistics.median(r.wall_split()[part] for r in runs[c])
                for part in WALL_SPLIT
            }
            for c in runs
        },
        "median_duration_ms": {
            LABELS[c]: {
                phase: statistics.median(r.duration_ms().get(phase, 0) for r in runs[c])
                for phase in (*PHASES, "triggerExecution")
            }
            for c in runs
        },
    }


def report(result: dict[str, Any]) -> None:
    rates = result["rec_per_s"]
    print(
        f"\n{result['records']:,} page views, {result['partitions']} partitions, "
        f"{result['rounds']} rounds; broker: {result['broker']}"
    )
    print(", ".join(f"{name} {number}" for name, number in result["versions"].items()))
    print(f"\n{'connector':<12}{'median s':>10}{'rec/s wall':>14}{'best':>12}{'in batch':>12}")
    for label, rate in rates.items():
        print(
            f"{label:<12}{result['median_wall_s'][label]:>10.2f}{rate['wall_median']:>14,.0f}"
            f"{rate['wall_best']:>12,.0f}{rate['in_batch_median']:>12,.0f}"
        )
    split = result["median_wall_split_s"]
    print(f"\n{'wall s (medians)':<30}" + "".join(f"{label:>12}" for label in split))
    for part, meaning in WALL_SPLIT.items():
        print(f"{meaning:<30}" + "".join(f"{split[label][part]:>12.2f}" for label in split))
    phases = result["median_duration_ms"]
    print(f"\n{'durationMs, all batches':<30}" + "".join(f"{label:>12}" for label in phases))
    for phase in (*PHASES, "triggerExecution"):
        print(f"{phase:<30}" + "".join(f"{phases[label][phase]:>12,.0f}" for label in phases))
    ratios = result["ratio_pykafka_to_builtin"]
    print(
        f"\npykafka / builtin: {ratios['wall']:.2f}x (wall, medians), "
        f"{ratios['in_batch']:.2f}x (in batch)"
    )
    verdict = "met" if result["target_met"] else "missed"
    print(f"target pykafka >= {result['target']:.1f}x builtin: {verdict}")


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except (brokers.KafkaBackendError, PipelineError) as error:
        # No broker, no Maven, no connector: one line that says which, not a traceback.
        print(f"bench-source: {error}", file=sys.stderr)
        raise SystemExit(2) from None
