"""The tightening scan at scale: its records/s against a raw consumer, and its memory.

Two topics of page views 100 ms of event time apart, record j in partition j mod 4 (small:
40k records quick, 1M full; large: ``event_scan.PARALLEL_FROM_RECORDS`` (800k) quick, 10M
full). The scan is
``event_scan.run_scans``, the code `upgrade plan` runs, over each partition's [0, end),
T_min at the last 0.1% of the records: the whole range is read and folded, and the first
feeding record is near the end. Each scan runs in a fresh child process, as `upgrade plan`
does; its rate is records ÷ the time ``run_scans`` took in there, and its peak memory is
that of the child and its workers (psutil, sampled). Beside it, in this process, a raw
confluent-kafka consumer reads the same partitions of the same topic in batches
(``consume()``, the fetch settings of the scan's reader), touching each record's key, value
and timestamp: the ratio is what reading Arrow batches, parsing and folding cost.

A round runs every side, the order alternating: the raw consumer and the scan with
workers=1 on the large topic, the scan with workers=1 on the small topic, and (when the
large topic is big enough for ``run_scans`` to use worker processes) the scan with
workers=2 on the large topic. Checked against what was produced, computed from the record
numbering alone: each partition's end, and what every scan found per partition (the first
feeding offset, the scanned, feeding, replayed and malformed counts).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from bench.kit import processes, topics
from bench.kit.context import Benchmark, Context, Result
from bench.kit.timing import ratios, side_by_side
from bench.record import Figure, Series, Target
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.kafka import partition_reader
from pyspark_kafka_upgrade._application.upgrade import event_scan
from pyspark_kafka_upgrade._application.upgrade.gather import source_options
from pyspark_kafka_upgrade._core.planner.decide import ScanRequest
from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.records.scans import ScanRange
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from support import pipelines

PARTITIONS = 4
ARTICLES = ("a1", "a2", "a3")
STEP_MS = 100
# T_min: the last 1/TAIL of the records feed open windows.
TAIL = 1000
SCAN_TIMEOUT_S = 1800.0
RAW_TIMEOUT_S = 900.0
# A fresh interpreter, as `upgrade plan` is: no Spark session, no client, nothing cached.
CHILD = "import sys; from bench.benchmarks.scan import child; raise SystemExit(child(sys.argv[1]))"
Found = dict[int, dict[str, Any]]


def run(ctx: Context) -> Result:
    # Quick: the large topic just reaches the size at which run_scans starts workers.
    small = ctx.size(40_000, 1_000_000)
    large = ctx.size(event_scan.PARALLEL_FROM_RECORDS, 10_000_000)
    problems: list[str] = []
    topic = {size: fill(ctx, size) for size in (small, large)}
    for size in (small, large):
        problems += check_ends(ctx.bootstrap, topic[size], size)
    peaks: dict[str, list[float]] = {"small": [], "large": [], "workers2": []}

    def scan(size: int, workers: int, peak_key: str) -> Callable[[], float]:
        def measure() -> float:
            seconds, peak, found = scan_in_child(ctx, topic[size], size, workers)
            peaks[peak_key].append(peak)
            where = f"scan of {size:,} records, workers={workers}"
            wrong = compare(found, expected(size))
            if wrong:
                problems.append(f"{where}: {'; '.join(wrong)}")
            ctx.say(f"{where}: {seconds:.1f} s, {size / seconds:,.0f} records/s, {peak:,.0f} MiB")
            return size / seconds

        return measure

    def raw() -> float:
        seconds, counts = raw_read(ctx.bootstrap, topic[large], ends(large))
        if counts != ends(large):
            problems.append(f"the raw consumer read {counts}, expected {ends(large)}")
        ctx.say(f"raw consumer, {large:,} records: {seconds:.1f} s, {large / seconds:,.0f}/s")
        return large / seconds

    sides = {"raw": raw, "scan": scan(large, 1, "large"), "small": scan(small, 1, "small")}
    # Below this size run_scans keeps to one process whatever it is told: nothing to compare.
    parallel = large >= event_scan.PARALLEL_FROM_RECORDS
    if parallel:
        sides["workers2"] = scan(large, 2, "workers2")
    rounds = ctx.size(1, 3)
    # No warm-up: every scan starts cold by design, as `upgrade plan` does, and the broker's
    # page cache holds the topics since they were produced.
    rates = side_by_side(sides, rounds, warmup=0, say=ctx.say)
    raw_rate = Series(tuple(rates["raw"]), "records/s")
    figures = [
        Figure(
            "scan.throughput",
            f"records/s, {large:,} records: scan (workers=1) ÷ raw consumer",
            ratios(rates["scan"], rates["raw"]),
            Target(">=", 0.5),
            {"scan": Series(tuple(rates["scan"]), "records/s"), "raw": raw_rate},
        ),
        Figure(
            "scan.memory",
            f"scan's peak memory (workers=1), {large:,} ÷ {small:,} records",
            ratios(peaks["large"], peaks["small"]),
            Target("<=", 1.2),
            {
                f"{large:,}": Series(tuple(peaks["large"]), "MiB"),
                f"{small:,}": Series(tuple(peaks["small"]), "MiB"),
            },
        ),
    ]
    if parallel:
        figures.append(
            Figure(
                "scan.throughput.workers2",
                f"records/s, {large:,} records: scan (workers=2) ÷ raw consumer",
                ratios(rates["workers2"], rates["raw"]),
                Target(">=", 0.5),
                {
                    "scan": Series(tuple(rates["workers2"]), "records/s"),
                    "raw": raw_rate,
                    "scan peak": Series(tuple(peaks["workers2"]), "MiB"),
                },
            )
        )
    else:
        ctx.say(f"workers=2 left out: {large:,} records are scanned in one process anyway")
    sizes = {"small": small, "large": large, "partitions": PARTITIONS, "rounds": rounds}
    return Result(tuple(figures), tuple(problems), sizes)


def fill(ctx: Context, records: int) -> str:
    topic = testing.unique_topic(f"bench-scan-{records}")
    ctx.say(f"filling {topic}: {records:,} page views in {PARTITIONS} partitions ...")
    started = time.perf_counter()
    topics.fill_topic(ctx.bootstrap, topic, records, PARTITIONS, page_views)
    elapsed = time.perf_counter() - started
    ctx.say(f"  filled in {elapsed:.1f} s ({records / elapsed:,.0f} records/s)")
    return topic


def page_views(indices: range) -> list[testing.Record]:
    """Page view j: partition j mod PARTITIONS, event time and CreateTime STEP_MS after j - 1."""
    made = []
    for j in indices:
        article, time_ms = ARTICLES[j % len(ARTICLES)], pipelines.BASE_MS + j * STEP_MS
        value = pipelines.event_value(article, time_ms)
        made.append(testing.Record(j % PARTITIONS, article.encode(), value, time_ms))
    return made


def ends(records: int) -> dict[int, int]:
    return {p: len(range(p, records, PARTITIONS)) for p in range(PARTITIONS)}


def first_feeding(records: int) -> int:
    return records - max(PARTITIONS, records // TAIL)


def expected(records: int) -> Found:
    """Per partition, what a scan of [0, end) with T_min at record ``first_feeding`` finds:
    event times grow with the offsets, so every record from the first feeding one feeds."""
    found: Found = {}
    first = first_feeding(records)
    for p, end in ends(records).items():
        number = first + (p - first) % PARTITIONS  # the partition's first record >= first
        offset = number // PARTITIONS if number < records else end
        found[p] = {
            "batch_level_offset": 0,
            "tightened_offset": offset,
            "end_offset": end,
            "scanned_records": end,
            "malformed_records": 0,
            "replayed_records": end - offset,
            "feeding_records": end - offset,
            "unsure_records": 0,
        }
    return found


def compare(found: Found, want: Found) -> list[str]:
    if set(found) != set(want):
        return [f"scanned partitions {sorted(found)}, expected {sorted(want)}"]
    return [
        f"partition {p}: {key} {found[p].get(key)}, expected {value}"
        for p in sorted(want)
        for key, value in want[p].items()
        if found[p].get(key) != value
    ]


def check_ends(bootstrap: str, topic: str, records: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-scan-ends"})
    try:
        found = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(PARTITIONS)
        }
    finally:
        consumer.close()
    want = ends(records)
    return [] if found == want else [f"{topic} ends at {found}, expected {want}"]


def raw_read(bootstrap: str, topic: str, until: dict[int, int]) -> tuple[float, dict[int, int]]:
    """Seconds for one confluent-kafka consumer to read every partition to ``until``, and
    the records it read per partition."""
    started = time.perf_counter()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-scan-raw",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            # As the scan's reader sets it: with librdkafka's default, fetching pauses for
            # a second whenever 100,000 records wait, and the baseline would crawl.
            "fetch.queue.backoff.ms": partition_reader.FETCH_QUEUE_BACKOFF_MS,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in until])
    counts = dict.fromkeys(until, 0)
    deadline = time.monotonic() + RAW_TIMEOUT_S
    try:
        while any(counts[p] < end for p, end in until.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the raw consumer read {counts} in {RAW_TIMEOUT_S:.0f} s")
            for message in consumer.consume(num_messages=10_000, timeout=1.0):
                if message.error() is None:
                    # What the scan takes from each record, so that the comparison is fair.
                    _ = (message.key(), message.value(), message.timestamp())
                    counts[message.partition() or 0] += 1
    finally:
        consumer.close()
    return time.perf_counter() - started, counts


def scan_in_child(
    ctx: Context, topic: str, records: int, workers: int
) -> tuple[float, float, Found]:
    """run_scans in a fresh process: its seconds, the tree's peak MiB, what it found."""
    spec = {"bootstrap": ctx.bootstrap, "topic": topic, "records": records, "workers": workers}
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), str(root / "tests"), os.environ.get("PYTHONPATH", "")])
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(spec)],
        cwd=ctx.workdir,
        env={**os.environ, "PYTHONPATH": path},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            with processes.peak_memory(process.pid) as peak:
                out, _ = process.communicate(timeout=SCAN_TIMEOUT_S)
        finally:
            # Its workers and multiprocessing's helpers share its process group.
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    if process.returncode != 0:
        raise RuntimeError(f"the scan with workers={workers} exited with {process.returncode}")
    told = json.loads(out.strip().splitlines()[-1])
    found = {int(scan.pop("partition")): scan for scan in told["partitions"]}
    return float(told["seconds"]), peak.mib, found


def child(spec_text: str) -> int:
    """In the fresh process: one run_scans over every partition's [0, end); JSON on stdout."""
    spec = json.loads(spec_text)
    topic, records, workers = str(spec["topic"]), int(spec["records"]), int(spec["workers"])
    overrides = [f"kafka.bootstrap_servers={spec['bootstrap']}", f"kafka.topics={topic}"]
    settings = load_settings(PROJECT, env={}, overrides=overrides).settings
    source = event_scan.EventSource(
        options=source_options(settings),
        events=settings.project.events,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )
    ranges = tuple(ScanRange((topic, p), 0, end) for p, end in ends(records).items())
    t_min = pipelines.BASE_MS + first_feeding(records) * STEP_MS
    request = ScanRequest(t_min=t_min, replay=ranges, late_before_event_ms=None, waiting=())
    started = time.perf_counter()
    # The parent says how each scan went; a line every 5 s from each would only flood it.
    results = event_scan.run_scans(request, source, progress=lambda line: None, workers=workers)
    seconds = time.perf_counter() - started
    partitions = [scan.to_json() for scan in results.replay.values()]
    print(json.dumps({"seconds": seconds, "partitions": partitions}), flush=True)
    return 0


BENCHMARK = Benchmark("scan", "tightening scan records/s ÷ a raw consumer's; its memory", run)
