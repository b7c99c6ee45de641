"""Records per second through the pip-only Kafka source, against raw consumers on the same data.

One run: start (or reach) a broker, fill a topic, then read every record
  - with one raw consumer per client library installed: confluent-kafka's plain poll()
    loop and its batched consume(), and kafka-python's poll(),
  - with the pykafka source into Spark's noop sink (Trigger.AvailableNow, warm JVM),
  - with Spark's built-in connector too, when SPARK_KAFKA_JARS names its jars,
and print the rates and the ratios to each raw consumer.

Each Spark query also pays a fixed cost, whatever it reads: starting and stopping the query,
planning its batch, launching its tasks. The benchmark measures that cost on a topic holding
one record per partition and reports three rates for each Spark source:
  - wall: records / wall time of a whole AvailableNow query, fixed cost included;
  - in batch: records / Spark's own triggerExecution time;
  - sustained: records / (wall time - the fixed cost), the rate at which a running stream
    keeps up with its input once the fixed cost is spread over enough records.

    python bench/source_throughput.py --records 500000 --partitions 2

The broker is chosen as in the tests (KAFKA_BACKEND, KAFKA_BOOTSTRAP_SERVERS).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The broker helpers live with the tests, the shared pieces in bench/: reused, not copied.
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

import bench.harness as harness  # noqa: E402
from bench.harness import Measurement, time_it  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

# A straight import sorts the same whatever the package is called.
import pyspark_kafka_upgrade.testing.kafka_backends as brokers  # noqa: E402
from pyspark_kafka_upgrade.example.pipeline import PROJECT  # noqa: E402
from pyspark_kafka_upgrade.kafka.pykafka import (  # noqa: E402
    PyKafkaDataSource,
)
from pyspark_kafka_upgrade.settings import (  # noqa: E402
    load_settings,
)

VALUE = json.dumps({"article_id": "a-0001", "user_id": "u-0001", "event_time": 0}).encode()


def fill_topic(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    base_ms = 1_700_000_000_000
    harness.fill_topic(
        bootstrap,
        topic,
        records,
        partitions,
        lambda indices: (
            brokers.Record(i % partitions, f"k{i % 1000}".encode(), VALUE, base_ms + i)
            for i in indices
        ),
    )


def confluent_consumer(
    bootstrap: str, topic: str, partitions: int, records: int, *, batched: bool
) -> int:
    """One confluent-kafka consumer: the plain poll() loop, or consume() in batches."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-raw",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    try:
        while seen < records:
            if batched:
                messages = consumer.consume(num_messages=10_000, timeout=1.0)
            else:
                message = consumer.poll(1.0)
                messages = [] if message is None else [message]
            for message in messages:
                if message.error() is None:
                    # Touch what the Spark source materialises, so the comparison is fair.
                    _ = (message.key(), message.value(), message.timestamp())
                    seen += 1
    finally:
        consumer.close()
    return seen


def kafka_python_consumer(bootstrap: str, topic: str, partitions: int, records: int) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    assignment = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(assignment)
    for partition in assignment:
        consumer.seek(partition, 0)
    seen = 0
    try:
        while seen < records:
            for batch in consumer.poll(timeout_ms=1000, max_records=10_000).values():
                for message in batch:
                    _ = (message.key, message.value, message.timestamp)
                seen += len(batch)
    finally:
        consumer.close()
    return seen


# Spark's own time spent in its batches (triggerExecution), per run.
BATCH_SECONDS: dict[str, list[float]] = {}


def spark_reader(spark: SparkSession, source_format: str, bootstrap: str, topic: str) -> int:
    stream = (
        spark.readStream.format(source_format)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    query = stream.writeStream.format("noop").trigger(availableNow=True).start()
    query.awaitTermination()
    progress = query.recentProgress
    BATCH_SECONDS.setdefault(source_format, []).append(
        sum(int(p["durationMs"]["triggerExecution"]) for p in progress) / 1000
    )
    return sum(int(p["numInputRows"]) for p in progress)


def start_spark(with_builtin: bool) -> SparkSession:
    settings = load_settings(PROJECT, env={}).settings
    if with_builtin:
        settings = harness.with_connector(settings, "builtin")
    spark = harness.start_spark(settings, "source-throughput")
    spark.dataSource.register(PyKafkaDataSource)
    return spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=500_000, help="records to read (500000)")
    parser.add_argument("--partitions", type=int, default=2, help="topic partitions (2)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per reader (3)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    with_builtin = bool(os.environ.get("SPARK_KAFKA_JARS", "").strip())

    with brokers.start_kafka_backend() as backend:
        bootstrap = backend.bootstrap_servers
        topic = brokers.unique_topic("bench")
        print(f"broker: {backend.name} at {bootstrap}; filling {topic} ...", file=sys.stderr)
        fill_topic(bootstrap, topic, args.records, args.partitions)

        readers: dict[str, Callable[[], int]] = {
            "raw confluent poll()": lambda: confluent_consumer(
                bootstrap, topic, args.partitions, args.records, batched=False
            ),
            "raw confluent consume()": lambda: confluent_consumer(
                bootstrap, topic, args.partitions, args.records, batched=True
            ),
        }
        if importlib.util.find_spec("kafka") is not None:
            readers["raw kafka-python poll()"] = lambda: kafka_python_consumer(
                bootstrap, topic, args.partitions, args.records
            )
        print("starting Spark (local[2]) ...", file=sys.stderr)
        spark = start_spark(with_builtin)
        readers["pykafka source"] = lambda: spark_reader(spark, "pykafka", bootstrap, topic)
        if with_builtin:
            readers["builtin source"] = lambda: spark_reader(spark, "kafka", bootstrap, topic)

        tiny_topic = brokers.unique_topic("bench-fixed-cost")
        fill_topic(bootstrap, tiny_topic, args.partitions, args.partitions)
        fixed_cost: dict[str, Callable[[], int]] = {}
        fixed_cost["pykafka source"] = lambda: spark_reader(spark, "pykafka", bootstrap, tiny_topic)
        if with_builtin:
            fixed_cost["builtin source"] = lambda: spark_reader(
                spark, "kafka", bootstrap, tiny_topic
            )

        results: list[Measurement] = []
        for name, read in readers.items():
            print(f"{name}: warm-up and {args.repeat} timed runs ...", file=sys.stderr)
            time_it(read, args.records)
            BATCH_SECONDS.clear()
            seconds = [time_it(read, args.records) for _ in range(args.repeat)]
            if name not in fixed_cost:
                results.append(Measurement(name, "raw", args.records, seconds))
                continue
            in_batch = list(next(iter(BATCH_SECONDS.values())))
            print(f"{name}: fixed cost per query, {args.repeat} runs ...", file=sys.stderr)
            fixed = statistics.median(
                time_it(fixed_cost[name], args.partitions) for _ in range(args.repeat)
            )
            print(f"{name}: fixed cost {fixed:.2f} s per query", file=sys.stderr)
            results += [
                Measurement(f"{name} (wall)", "spark", args.records, seconds),
                Measurement(f"{name} (in batch)", "spark", args.records, in_batch),
                Measurement(
                    f"{name} (sustained)",
                    "spark",
                    args.records,
                    # A run faster than the median fixed cost would give a negative time.
                    [max(s - fixed, 1e-3) for s in seconds],
                ),
            ]

    report(results, as_json=args.json)
    return 0


def report(results: list[Measurement], *, as_json: bool) -> None:
    raw = [m for m in results if m.kind == "raw"]
    sources = [m for m in results if m.kind == "spark"]
    if as_json:
        document = {
            "rates": {m.reader: {"best": m.best_rate, "median": m.median_rate} for m in results},
            "ratios": {
                f"{s.reader} / {r.reader}": s.median_rate / r.median_rate
                for s in sources
                for r in raw
            },
        }
        print(json.dumps(document, indent=2))
        return
    print(f"\n{'reader':<32}{'median rec/s':>14}{'best rec/s':>14}")
    for m in results:
        print(f"{m.reader:<32}{m.median_rate:>14,.0f}{m.best_rate:>14,.0f}")
    print()
    for s in sources:
        for r in raw:
            print(f"{s.reader} / {r.reader}: {s.median_rate / r.median_rate:.2f}x (medians)")


if __name__ == "__main__":
    raise SystemExit(main())
