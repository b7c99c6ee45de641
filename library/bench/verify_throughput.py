"""Records per second of `verify` against the streaming job's own, and the driver's memory.

One run, one process, one Spark session (local[2]): start (or reach) a broker, fill one topic
with --records valid page views (event times in order, 100 ms apart, round robin over the
partitions: nothing late for 10-minute windows and a 5-minute watermark delay), then

  streaming  `run` (run_pipeline, Trigger.AvailableNow) over the whole topic, in --batches
             batches (kafka.max_offsets_per_trigger), every batch recorded in the ledger;
  verify     `verify` (verify_pipeline) over the last fraction of the range for each of
             --sizes, smallest first, the whole range (from below the first event) last.

Before them, an untimed warm-up of both on a small topic of its own (--warmup), so that
neither pays alone for JIT compilation and Python worker start-up. Each verify must say
OK, and the whole-range one must have read every record: the figures are for correct runs.

Reported per phase: records, wall seconds, records/s, verify / streaming (target >= 1.0x on
the whole range), and memory sampled every 0.2 s from /proc and the JVM: the peak RSS of
the driver (this Python process + its JVM), the JVM's peak used heap, and the peak RSS of the
Python workers below the JVM. In local mode the driver JVM is the executor too: its heap also
holds the tasks' buffers, which depend on the partitions and batch sizes, not on the range.
Each phase starts after a full GC of both heaps, and the smaller ranges run first, so that
a peak left over from an earlier phase cannot pass for the whole range's: if the whole range
needs no more memory than a quarter of it, memory does not grow with the range. Then the
Spark stages with the most task time in each phase, from Spark's event log.

    python bench/verify_throughput.py --records 5000000
    python bench/verify_throughput.py --records 200000 --connector python --sizes 0.25,0.5,1
    python bench/verify_throughput.py --records 1000000 --dir /tmp/bench-verify   # keep it

The broker is chosen as in the tests (KAFKA_BACKEND, KAFKA_BOOTSTRAP_SERVERS; KAFKA_BACKEND=
apache runs real Apache Kafka on 127.0.0.1); the built-in connector's jars come from
SPARK_KAFKA_JARS, else from Maven (resolved once, then cached). Progress goes to stderr, the
tables to stdout. A wrong result exits 1; a missed target only says so (exit 0); no broker,
no Maven or no connector jars: exit 2, one line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
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
from pyspark_kafka_upgrade.errors import PipelineError  # noqa: E402
from pyspark_kafka_upgrade.model.verification import VerifyReport  # noqa: E402
from pyspark_kafka_upgrade.reconcile.render import render_report  # noqa: E402
from pyspark_kafka_upgrade.run.command import RunRequest, run_pipeline  # noqa: E402
from pyspark_kafka_upgrade.run.queries import AGGREGATES_QUERY  # noqa: E402
from pyspark_kafka_upgrade.settings import Settings  # noqa: E402
from pyspark_kafka_upgrade.spark.session import build_spark_session  # noqa: E402
from pyspark_kafka_upgrade.verify.command import VerifyRange, verify_pipeline  # noqa: E402

Connector = Literal["python", "builtin"]
TARGET_RATIO = 1.0
ARTICLES = [f"a{n}" for n in range(1, 21)]
WINDOW_MS = 10 * pipelines.MINUTE_MS  # pipeline_settings' window.duration
SAMPLE_EVERY_S = 0.2
MB = 1024 * 1024
TOP_STAGES = 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=5_000_000, help="page views (5000000)")
    parser.add_argument(
        "--connector", choices=("python", "builtin"), default="builtin", help="(builtin)"
    )
    parser.add_argument("--partitions", type=int, default=2, help="topic partitions (2)")
    parser.add_argument(
        "--sizes",
        default="0.25,0.5,1",
        help="fractions of the range to verify, the last part of it; 1 is always run (0.25,0.5,1)",
    )
    parser.add_argument(
        "--batches", type=int, default=10, help="batches the streaming job reads the topic in (10)"
    )
    parser.add_argument(
        "--warmup", type=int, default=50_000, help="page views of the untimed warm-up; 0: none"
    )
    parser.add_argument("--dir", type=Path, help="keep the work directory here (default: a temp)")
    args = parser.parse_args(argv)
    if args.records < 1 or args.partitions < 1 or not 1 <= args.batches <= 90:
        parser.error("--records and --partitions must be at least 1, --batches 1 to 90")
    try:
        sizes = sorted({float(size) for size in args.sizes.split(",") if size.strip()} | {1.0})
    except ValueError:
        parser.error(f"--sizes {args.sizes!r}: fractions such as 0.25,0.5,1")
    if not all(0 < size <= 1 for size in sizes):
        parser.error("--sizes: each fraction must be in (0, 1]")

    with brokers.start_kafka_backend() as backend, work_directory(args.dir) as workdir:
        say(f"broker: {backend.description}; work directory: {workdir}")
        bench = Bench(backend.bootstrap_servers, workdir, args.connector, args.partitions)
        main_run = bench.fill("bench-verify", args.records, args.batches)
        warm = bench.fill("bench-verify-warmup", args.warmup, args.batches) if args.warmup else None
        event_log = workdir / "eventlog" / main_run.settings.pipeline.name
        spark = start_spark(main_run.settings, event_log)
        try:
            if warm is not None:
                say(f"warm-up: {args.warmup:,} page views, streaming then verify (untimed) ...")
                bench.stream(spark, warm)
                bench.verify(spark, warm, 1.0)
            streaming = bench.stream(spark, main_run)
            verifies = [bench.verify(spark, main_run, size) for size in sizes]
        finally:
            spark.stop()
        stages = stages_by_phase(event_log, [streaming, *verifies])
        broker = backend.description
    report(args, broker, main_run, streaming, verifies, stages)
    return 0


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def work_directory(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        yield Path(tmp)


def start_spark(settings: Settings, event_log: Path) -> SparkSession:
    """harness.start_spark's session, with Spark's event log on to tell where time went."""
    event_log.mkdir(parents=True, exist_ok=True)
    say(f"starting Spark (local[2], connector {settings.kafka.connector}) ...")
    return build_spark_session(
        settings,
        app_name="verify-throughput",
        master="local[2]",
        extra_conf={
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": str(settings.pipeline.state_partitions),
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": event_log.as_uri(),
            "spark.eventLog.compress": "false",
        },
    )


# --------------------------------------------------------------------------------------------
# The phases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Topic:
    """A filled topic and the pipeline settings that read it."""

    settings: Settings
    records: int
    first_ms: int  # the first and last event times produced
    last_ms: int
    produce_s: float


@dataclass
class Phase:
    name: str
    records: int
    seconds: float
    memory: Memory
    started_ms: int  # epoch ms, to find its Spark stages
    ended_ms: int
    report: VerifyReport | None = None
    detail: str = ""


class Bench:
    def __init__(self, bootstrap: str, workdir: Path, connector: Connector, partitions: int):
        self.bootstrap = bootstrap
        self.workdir = workdir
        self.connector: Connector = connector
        self.partitions = partitions

    def fill(self, prefix: str, records: int, batches: int) -> Topic:
        topic = brokers.unique_topic(prefix)
        say(f"filling {topic}: {records:,} page views in {self.partitions} partitions ...")
        started = time.perf_counter()
        harness.fill_topic(
            self.bootstrap,
            topic,
            records,
            self.partitions,
            lambda indices: harness.page_views(indices, self.partitions, ARTICLES),
        )
        produce_s = time.perf_counter() - started
        say(f"  {produce_s:.1f} s, {records / produce_s:,.0f} records/s")
        settings = pipelines.pipeline_settings(
            self.workdir / topic,
            self.bootstrap,
            topic,
            f"kafka.connector={self.connector}",
            # Batches with event times of their own: verify skips those before its range.
            f"kafka.max_offsets_per_trigger={-(-records // batches)}",
        )
        first = pipelines.BASE_MS
        return Topic(
            settings, records, first, first + (records - 1) * harness.EVENT_STEP_MS, produce_s
        )

    def stream(self, spark: SparkSession, topic: Topic) -> Phase:
        """`run` with Trigger.AvailableNow until it has read the whole topic."""
        say(f"streaming: run_pipeline over {topic.records:,} records ...")
        # run's line per batch goes to sys.stdout, which the tables keep to themselves.
        with measuring(spark) as (memory, clock), redirect_stdout(sys.stderr):
            summary = run_pipeline(
                RunRequest(settings=topic.settings, available_now=True, echo=say), spark
            )
        progress = summary.progress.get(AGGREGATES_QUERY, [])
        read = sum(int(p["numInputRows"]) for p in progress)
        if read != topic.records:
            raise SystemExit(f"the streaming job read {read:,} records, expected {topic.records:,}")
        batches = sum(1 for p in progress if p["numInputRows"])
        phase = Phase("streaming", read, clock.seconds, memory, clock.started_ms, clock.ended_ms)
        phase.detail = f"{batches} batches"
        say(f"  {phase.seconds:.1f} s, {read / phase.seconds:,.0f} records/s")
        return phase

    def verify(self, spark: SparkSession, topic: Topic, size: float) -> Phase:
        """`verify` of the windows in the last ``size`` of the range; it must say OK."""
        if size >= 1:
            from_ms = topic.first_ms - WINDOW_MS  # below the first event: every window
        else:
            cut = topic.last_ms - int(size * (topic.last_ms - topic.first_ms))
            from_ms = cut - cut % WINDOW_MS
        say(f"verify: {size:g} of the range (windows from {pipelines.iso(from_ms)}) ...")
        with measuring(spark) as (memory, clock):
            verified = verify_pipeline(topic.settings, VerifyRange(from_ms=from_ms), spark=spark)
        if not verified.ok:
            raise SystemExit(f"verify did not say OK:\n{render_report(verified)}")
        if size >= 1 and verified.events_read != topic.records:
            raise SystemExit(
                f"verify read {verified.events_read:,} records, expected {topic.records:,}"
            )
        phase = Phase(
            f"verify {size:g}",
            verified.events_read,
            clock.seconds,
            memory,
            clock.started_ms,
            clock.ended_ms,
            verified,
        )
        counts = ", ".join(f"{n:,} {status}" for status, n in sorted(verified.counts.items()))
        phase.detail = f"windows: {counts}"
        say(f"  {phase.seconds:.1f} s, {phase.records / phase.seconds:,.0f} records/s; {counts}")
        return phase


@dataclass
class Clock:
    started_ms: int = 0
    ended_ms: int = 0
    seconds: float = 0.0


@contextmanager
def measuring(spark: SparkSession) -> Iterator[tuple[Memory, Clock]]:
    """Time the block and sample the driver's memory during it, after a GC of both heaps."""
    jvm: Any = spark.sparkContext._jvm
    gc.collect()
    jvm.java.lang.System.gc()
    sampler = MemorySampler(jvm)
    clock = Clock(started_ms=int(time.time() * 1000))
    started = time.perf_counter()
    try:
        yield sampler.memory, clock
    finally:
        clock.seconds = time.perf_counter() - started
        clock.ended_ms = int(time.time() * 1000)
        sampler.stop()


# --------------------------------------------------------------------------------------------
# Memory: /proc for the processes (Linux), the JVM's Runtime for its heap
# --------------------------------------------------------------------------------------------


@dataclass
class Memory:
    """Peaks over one phase, each the largest value seen at one sample."""

    driver_rss: int = 0  # this Python process + its JVM, bytes
    python_rss: int = 0
    jvm_rss: int = 0
    heap_used: int = 0  # the JVM's used heap (live and not yet collected)
    heap_max: int = 0  # -Xmx (spark.driver.memory)
    workers_rss: int = 0  # Python workers below the JVM, summed
    samples: int = 0


class MemorySampler:
    """Samples :class:`Memory` every 0.2 s in a thread until :meth:`stop`.

    The broker, when it is a child of this process too, is not counted: only this process,
    the JVM (its pid asked of the JVM itself) and the JVM's descendants.
    """

    def __init__(self, jvm: Any) -> None:
        self.memory = Memory()
        self._runtime = jvm.java.lang.Runtime.getRuntime()
        self._jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
        self.memory.heap_max = int(self._runtime.maxMemory())
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)
        self._sample()  # and once at the end, when a collect() has just returned

    def _run(self) -> None:
        while not self._done.wait(SAMPLE_EVERY_S):
            self._sample()

    def _sample(self) -> None:
        memory = self.memory
        python, jvm = rss(os.getpid()), rss(self._jvm_pid)
        # Python only: the JVM also forks helpers (jspawnhelper, Hadoop's shell commands),
        # which until they exec show the JVM's own RSS.
        workers = sum(rss(pid, named="python") for pid in descendants(self._jvm_pid))
        try:
            heap = int(self._runtime.totalMemory()) - int(self._runtime.freeMemory())
        except Exception:  # the gateway busy or closing: the RSS samples still count
            heap = 0
        memory.python_rss = max(memory.python_rss, python)
        memory.jvm_rss = max(memory.jvm_rss, jvm)
        memory.driver_rss = max(memory.driver_rss, python + jvm)
        memory.workers_rss = max(memory.workers_rss, workers)
        memory.heap_used = max(memory.heap_used, heap)
        memory.samples += 1


def rss(pid: int, *, named: str = "") -> int:
    """VmRSS of ``pid`` in bytes, if its name starts with ``named``; 0 once it has gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    fields = dict(line.split(":", 1) for line in status if ":" in line)
    if not fields.get("Name", "").strip().startswith(named):
        return 0
    value = fields.get("VmRSS", "").split()
    return int(value[0]) * 1024 if value else 0


def descendants(root: int) -> list[int]:
    """The processes below ``root``, through each thread's ``children`` list."""
    found: list[int] = []
    pending = [root]
    while pending:
        pid = pending.pop()
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                below = [int(child) for child in children.read_text().split()]
            except OSError:
                continue
            found += below
            pending += below
    return found


# --------------------------------------------------------------------------------------------
# Where the time went: Spark's event log
# --------------------------------------------------------------------------------------------


@dataclass
class Stage:
    stage_id: int
    name: str  # Spark's, "<action> at <call site>"
    tasks: int
    wall_s: float  # submitted to completed, waiting for a core included
    task_s: float  # the tasks' executorRunTime, summed
    cpu_s: float  # the tasks' executorCpuTime, summed
    shuffled: int  # records written to the shuffle
    does: str  # what it runs: its sources and the plan's operators, in order


# Scopes that say nothing about what a stage does.
_NOISE = ("WholeStageCodegen", "mapPartitions", "map", "parallelize", "DeserializeToObject")


@dataclass
class PhaseStages:
    stages: list[Stage] = field(default_factory=list)

    @property
    def task_s(self) -> float:
        return sum(stage.task_s for stage in self.stages)


def stages_by_phase(event_log: Path, phases: Sequence[Phase]) -> dict[str, PhaseStages]:
    """The completed stages each phase submitted, from the event log (read once Spark stopped)."""
    result = {phase.name: PhaseStages() for phase in phases}
    # Spark 4 writes a directory per application, its events in rolled files events_<n>_*.
    for path in sorted(event_log.rglob("events_*")):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if '"SparkListenerStageCompleted"' not in line:
                    continue
                info = json.loads(line)["Stage Info"]
                submitted, completed = info.get("Submission Time"), info.get("Completion Time")
                if submitted is None or completed is None:
                    continue
                phase = next((p for p in phases if p.started_ms <= submitted <= p.ended_ms), None)
                if phase is not None:
                    result[phase.name].stages.append(_stage(info, (completed - submitted) / 1000))
    return result


def _stage(info: dict[str, Any], wall_s: float) -> Stage:
    sums = {
        a.get("Name"): a.get("Value")
        for a in info.get("Accumulables", [])
        if isinstance(a.get("Value"), int | str)
    }

    def metric(name: str) -> int:
        return int(sums.get(f"internal.metrics.{name}", 0) or 0)

    rdds = sorted(info.get("RDD Info", []), key=lambda rdd: int(rdd["RDD ID"]))
    does: list[str] = [str(rdd["Name"]) for rdd in rdds if not rdd.get("Parent IDs")]
    for rdd in rdds:
        scope = json.loads(rdd["Scope"]).get("name", "") if rdd.get("Scope") else ""
        scope = scope.strip()
        if scope and not scope.startswith(_NOISE) and scope not in does:
            does.append(scope)
    return Stage(
        int(info["Stage ID"]),
        str(info["Stage Name"]),
        int(info["Number of Tasks"]),
        wall_s,
        metric("executorRunTime") / 1000,
        metric("executorCpuTime") / 1e9,
        metric("shuffle.write.recordsWritten"),
        " > ".join(does),
    )


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


def report(
    args: argparse.Namespace,
    broker: str,
    topic: Topic,
    streaming: Phase,
    verifies: Sequence[Phase],
    stages: dict[str, PhaseStages],
) -> None:
    rate = streaming.records / streaming.seconds
    print(
        f"\n{topic.records:,} page views, {args.partitions} partitions, connector "
        f"{args.connector}, local[2] ({os.cpu_count()} cores); broker: {broker}"
    )
    print(", ".join(f"{name} {version(name)}" for name in ("pyspark", "confluent-kafka")))
    print(f"produced in {topic.produce_s:.1f} s ({topic.records / topic.produce_s:,.0f} records/s)")
    heading = (
        f"{'phase':<14}{'records':>11}{'seconds':>9}{'records/s':>11}{'ratio':>7}"
        f"{'driver RSS':>12}{'python':>8}{'JVM':>7}{'heap':>7}{'workers':>9}"
    )
    print(f"\n{heading}\n{'-' * len(heading)}")
    for phase in (streaming, *verifies):
        own = phase.records / phase.seconds
        memory = phase.memory
        versus = "" if phase is streaming else f"{own / rate:.2f}x"
        print(
            f"{phase.name:<14}{phase.records:>11,}{phase.seconds:>9.1f}{own:>11,.0f}{versus:>7}"
            f"{memory.driver_rss / MB:>9,.0f} MB{memory.python_rss / MB:>8,.0f}"
            f"{memory.jvm_rss / MB:>7,.0f}{memory.heap_used / MB:>7,.0f}"
            f"{memory.workers_rss / MB:>9,.0f}"
        )
    print(
        "\nratio: records/s of verify / of the streaming job (target >= "
        f"{TARGET_RATIO:.1f}x on the whole range).\nMemory: peaks in MB, sampled every "
        f"{SAMPLE_EVERY_S} s; driver RSS = this Python process + its JVM (heap max "
        f"{streaming.memory.heap_max / MB:,.0f} MB); heap = the JVM's used heap; workers = the "
        "Python workers below the JVM.\nIn local mode the driver JVM is the executor too: its "
        "RSS and heap include the tasks' work.\nEach phase began after a full GC of both "
        "heaps; they ran in the order shown."
    )
    for phase in (streaming, *verifies):
        print(f"{phase.name}: {phase.detail}")

    print(
        f"\nthe {TOP_STAGES} Spark stages of each phase with the most task time (task s: "
        "executorRunTime summed over its tasks; wall: submitted to completed):"
    )
    for phase in (streaming, *verifies):
        found = stages.get(phase.name, PhaseStages())
        print(f"  {phase.name}: {len(found.stages)} stages, {found.task_s:.1f} task s in all")
        for stage in sorted(found.stages, key=lambda s: -s.task_s)[:TOP_STAGES]:
            print(
                f"    stage {stage.stage_id:<5}{stage.task_s:>6.1f} task s{stage.cpu_s:>6.1f} cpu s"
                f"{stage.wall_s:>6.1f} wall s{stage.tasks:>4} tasks{stage.shuffled:>10,} shuffled"
                f"  {stage.name}\n{'':<10}{stage.does}"
            )

    whole = verifies[-1]
    ratio = (whole.records / whole.seconds) / rate
    smallest = verifies[0]
    growth = (whole.memory.driver_rss - smallest.memory.driver_rss) / MB
    heap_growth = (whole.memory.heap_used - smallest.memory.heap_used) / MB
    verdict = "met" if ratio >= TARGET_RATIO else "missed"
    memory_line = (
        f"peak driver RSS {whole.memory.driver_rss / MB:,.0f} MB on the whole range vs "
        f"{smallest.memory.driver_rss / MB:,.0f} MB on {smallest.name.split()[-1]} of it "
        f"({growth:+,.0f} MB; heap {heap_growth:+,.0f} MB)"
        if len(verifies) > 1
        else f"peak driver RSS {whole.memory.driver_rss / MB:,.0f} MB"
    )
    print(
        f"\nconclusion: verify read {whole.records:,} records at "
        f"{whole.records / whole.seconds:,.0f}/s, {ratio:.2f}x the streaming job's "
        f"{rate:,.0f}/s (target >= {TARGET_RATIO:.1f}x: {verdict}); {memory_line}."
    )


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except (brokers.KafkaBackendError, PipelineError) as error:
        # No broker, no Maven, no connector: one line that says which, not a traceback.
        print(f"bench-verify: {error}", file=sys.stderr)
        raise SystemExit(2) from None
