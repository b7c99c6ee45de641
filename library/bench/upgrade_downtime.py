"""Downtime of an upgrade onto a new checkpoint against a plain restart, and the scan behind it.

`upgrade plan` and `upgrade apply` start no Spark JVM, so an upgrade should keep the
pipeline down about as long as a plain restart does: target upgrade / plain <= 1.3x.

Downtime runs from the moment the old `run` process has exited (after SIGTERM, graceful) to
the first batch the next `run` commits: a new commits/N file in the generation's
checkpoint, <root>/checkpoints/generation-<n>/aggregates/commits/. Every command runs as
an operator runs it: the CLI as a process of its own, on the real broker (KAFKA_BACKEND,
as in the tests), in one work directory.

Part A, downtime. A topic of 2 partitions, page views 20 s of event time apart (articles
a1..a3), 10-minute tumbling windows, 5-minute watermark delay, a trigger every second, the
ledger in the project's store. Version 1 counts views; each upgrade adds a metric (users,
first_user, last_user, ...).
  warm-up  120 events; `run` (version 1) until it has committed them; SIGTERM. Untimed.
  each of --rounds rounds:
    plain    --events new events, then at once `run` again, same settings;
    upgrade  --events new events, then at once `upgrade plan --out PLAN`,
             `upgrade apply PLAN`, and `run` with the next version (its first batch is
             the replay batch).
  Each `run` is split in two: process start -> its banner `running generation` (JVM start
  and query build), banner -> the commit (query start and first batch). After the measured
  commit it runs on until it has committed every event and its watermark has caught up
  (every window that can be written is), then gets SIGTERM.
  The first batch is split again by its checkpoint files: banner -> offsets/N (the query
  starts and plans the batch), offsets/N -> commits/N (the batch runs and commits).
  Checked: every exit code; each plan against the events as produced (the old end offsets,
  W, and per partition the first offset whose event can fall in a window ending after W);
  that no JVM ran in `upgrade plan` or `upgrade apply`; at the end `output show --json`
  against a count of the events per window and article (tests/support/oracle.py): no event
  lost, no window written by two generations.
  On 2 shared cores another process's work slows a restart by seconds, so each row also
  says how much CPU processes outside this benchmark took during that downtime (/proc).

Part B, the tightening scan at scale. A topic of --partitions partitions filled with
--scan-records page views 100 ms apart, scanned with `event_scan.run_scans`, the code
`upgrade plan` runs, over each partition's [0, end). T_min is at the last 0.1% of the
records, so the whole range is read and folded and the first feeding record is near the
end. Variants, each in a fresh process: workers=1 (in that process) and workers=2 (two
worker processes). Reported: records/s, and the peak memory of that process and its
workers (the sum of each one's VmHWM, sampled from /proc). Checked against what was
produced: per partition the first feeding offset, and the scanned and feeding counts.

Progress goes to stderr, the tables to stdout (--json: the results as JSON). --dir keeps
the work directory: the pipeline's root and ledger, the plan files, and commands.log with
every command line run and its output. A wrong result or a failed step exits 1; a missed
target only says so (exit 0); no broker, no Maven or no connector jars: exit 2, one line.

    python bench/upgrade_downtime.py                      # both parts, 3 rounds, 5M records
    python bench/upgrade_downtime.py --connector builtin --rounds 1 --skip-scan
    python bench/upgrade_downtime.py --skip-downtime --scan-records 1000000 --partitions 8
    python bench/upgrade_downtime.py --dir /tmp/bench-upgrade   # keep settings, plans, logs
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import select
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
# The broker helpers live with the tests, the shared pieces in bench/: reused, not copied.
SEARCH_PATH = [str(HERE.parent), str(HERE.parent / "tests")]
sys.path[:0] = SEARCH_PATH

import bench.harness as harness  # noqa: E402

import pyspark_kafka_upgrade.testing.driver_process as driver_process  # noqa: E402
import pyspark_kafka_upgrade.testing.kafka_backends as brokers  # noqa: E402
import pyspark_kafka_upgrade.testing.oracle as oracle  # noqa: E402
import pyspark_kafka_upgrade.testing.waiting as waiting  # noqa: E402
import support.pipelines as pipelines  # noqa: E402
from pyspark_kafka_upgrade.errors import (  # noqa: E402
    PipelineError,
)
from pyspark_kafka_upgrade.example.pipeline import PROJECT  # noqa: E402
from pyspark_kafka_upgrade.model.plan import UpgradePlan  # noqa: E402
from pyspark_kafka_upgrade.model.scans import ScanRange  # noqa: E402
from pyspark_kafka_upgrade.planner.decide import (  # noqa: E402
    ScanRequest,
)
from pyspark_kafka_upgrade.settings import (  # noqa: E402
    load_settings,
)
from pyspark_kafka_upgrade.upgrade import (  # noqa: E402
    event_scan,
)
from pyspark_kafka_upgrade.upgrade.gather import (  # noqa: E402
    open_broker,
    source_options,
)
from support.example import MODULE as PROG  # noqa: E402

T = TypeVar("T")

TARGET_RATIO = 1.3
ARTICLES = ("a1", "a2", "a3")
PARTITIONS = 2  # part A's topic
EVENT_EVERY_MS = 20_000
WINDOW_MS = 10 * pipelines.MINUTE_MS
DELAY_MS = 5 * pipelines.MINUTE_MS
GRID = oracle.Grid(WINDOW_MS)
FIRST_EVENTS = 120  # the warm-up: 40 minutes of event time
# Version n has the first n metrics: each upgrade adds one, which the old state cannot carry.
METRICS = (
    ("views", "count(*)"),
    ("users", "approx_count_distinct(user_id)"),
    ("first_user", "min(user_id)"),
    ("last_user", "max(user_id)"),
    ("named_views", "count(user_id)"),
    ("first_seen", "min(event_time)"),
    ("last_seen", "max(event_time)"),
    ("articles", "approx_count_distinct(article_id)"),
)
BANNER = re.compile(r": running generation (\d+) ")
# A JVM starting cold on a busy 2-core machine, then its first batch.
START_TIMEOUT_S = driver_process.START_TIMEOUT_S
SETTLE_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 180.0  # the batch in flight commits first
COMMAND_TIMEOUT_S = 300.0  # upgrade plan, upgrade apply, output show
SCAN_TIMEOUT_S = 3600.0
POLL_S = 0.02
# The scan's T_min: the last 1/SCAN_TAIL of the records feed open windows.
SCAN_TAIL = 1000
VARIANTS = (1, 2)  # workers
# Other processes taking this much CPU during a downtime disturbed its measurement.
DISTURBED_CPU_S = 2.0


class StepFailedError(Exception):
    """A command exited with a code it should not have, or did not get there in time."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="plain restart + upgrade rounds (3)")
    parser.add_argument(
        "--events", type=int, default=30, help="new events before each restart and upgrade (30)"
    )
    parser.add_argument(
        "--connector",
        choices=("python", "builtin"),
        default="python",
        help="Kafka connector of every version in part A (python)",
    )
    parser.add_argument(
        "--scan-records", type=int, default=5_000_000, help="records part B scans (5000000)"
    )
    parser.add_argument("--partitions", type=int, default=4, help="part B's partitions (4)")
    parser.add_argument("--skip-downtime", action="store_true", help="skip part A")
    parser.add_argument("--skip-scan", action="store_true", help="skip part B")
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="work directory, kept: settings, plans, the commands run and their output "
        "(default: a temporary one, removed)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.rounds >= len(METRICS):
        parser.error(f"--rounds must be 1 to {len(METRICS) - 1}: each upgrade adds a metric")
    if args.events < 1 or args.scan_records < args.partitions or args.partitions < 1:
        parser.error(
            "--events and --partitions must be at least 1, --scan-records at least --partitions"
        )
    if args.skip_downtime and args.skip_scan:
        parser.error("--skip-downtime and --skip-scan leave nothing to measure")
    # Every line a command prints reaches us when it is printed: the banner is a timestamp.
    os.environ["PYTHONUNBUFFERED"] = "1"

    with work_directory(args.dir, parser) as work, brokers.start_kafka_backend() as backend:
        say(f"broker: {backend.description}")
        say(f"work directory: {work}")
        result: dict[str, Any] = {
            "broker": backend.description,
            "versions": {name: version(name) for name in ("pyspark", "confluent-kafka")},
        }
        wrong: list[str] = []
        if not args.skip_downtime:
            started = time.monotonic()
            downtime = measure_downtime(
                work, backend.bootstrap_servers, args.rounds, args.events, args.connector
            )
            result["downtime"] = downtime.to_json()
            result["downtime"]["wall_s"] = time.monotonic() - started
            wrong += downtime.wrong
        if not args.skip_scan:
            started = time.monotonic()
            scans = measure_scans(
                work, backend.bootstrap_servers, args.scan_records, args.partitions
            )
            result["scan"] = scans.to_json()
            result["scan"]["wall_s"] = time.monotonic() - started
            wrong += scans.wrong

    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    for problem in wrong:
        print(f"WRONG: {problem}", file=sys.stderr)
    return 1 if wrong else 0


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def work_directory(chosen: Path | None, parser: argparse.ArgumentParser) -> Iterator[Path]:
    if chosen is None:
        with tempfile.TemporaryDirectory(prefix="bench-upgrade-") as temporary:
            yield Path(temporary)
        return
    work = chosen.resolve()
    work.mkdir(parents=True, exist_ok=True)
    if any(work.iterdir()):
        parser.error(f"{work} is not empty: give a new or empty --dir")
    yield work


# --------------------------------------------------------------------------------------------
# Commands as processes of their own
# --------------------------------------------------------------------------------------------


class TimedDriver(driver_process.DriverProcess):
    """A CLI command in its own process group; each output line stamped when it arrived."""

    def __init__(self, arguments: Sequence[str], cwd: Path) -> None:
        # Set before the reader thread starts, in the base class's __init__.
        self.stamped: list[tuple[float, str]] = []
        self.started_at = time.time()
        super().__init__(arguments, cwd)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stamped.append((time.time(), line))
            self.lines.append(line)

    def tail(self, count: int = 25) -> str:
        return "".join(self.lines[-count:])


class Commands:
    """Runs the CLI in ``work`` with --set overrides, and logs each command line."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.log = work / "commands.log"

    @contextmanager
    def launched(self, arguments: Sequence[str]) -> Iterator[TimedDriver]:
        """The command as a process group that is killed, all of it, when the block ends."""
        with self.log.open("a") as log:
            log.write(shlex.join(["python", "-m", PROG, *arguments]) + "\n")
        driver = TimedDriver(arguments, self.work)
        try:
            yield driver
        finally:
            driver.kill()  # SIGKILL to the group if anything of it is left; reaps the driver
            with self.log.open("a") as log:
                log.write("".join(f"    {line}" for line in driver.lines) + "\n")

    def timed(self, arguments: Sequence[str], what: str) -> tuple[float, str, bool]:
        """Run a command to its end: seconds from its start to its exit, its output, and
        whether a JVM ran in its process group meanwhile."""
        with self.launched(arguments) as driver:
            sampler = TreeMemorySampler(driver.process.pid, interval_s=0.05)
            try:
                exited_at = wait_for_exit(driver.process, COMMAND_TIMEOUT_S)
            finally:
                memory = sampler.stop()
            if exited_at is None:
                raise StepFailedError(
                    f"{what} did not end within {COMMAND_TIMEOUT_S:.0f} s:\n{driver.tail()}"
                )
            code = driver.wait(10)
        if code != 0:
            raise StepFailedError(f"{what} exited with {code}:\n{driver.tail()}")
        jvm = "java" in memory.names.values()
        return exited_at - driver.started_at, driver.output, jvm

    def stdout_of(self, arguments: Sequence[str], what: str) -> str:
        """A command's stdout alone (Spark's warnings go to stderr), e.g. for --json."""
        with self.log.open("a") as log:
            log.write(shlex.join(["python", "-m", PROG, *arguments]) + "\n")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        with (
            tempfile.TemporaryFile("w+") as errors,
            subprocess.Popen(
                [sys.executable, "-m", PROG, *arguments],
                cwd=self.work,
                env=env,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                start_new_session=True,
            ) as process,
        ):
            try:
                out, _ = process.communicate(timeout=COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                out = None
            finally:
                kill_group(process)
            errors.seek(0)
            lines = errors.readlines()
            # The command's own one-line error names the cause; Spark's log lines around it
            # (stack traces of failed tasks) only bury it.
            mine = [line for line in lines if line.startswith(f"{PROG}: ")]
            tail = "".join(mine or lines[-20:])
        if out is None:
            raise StepFailedError(f"{what} did not end within {COMMAND_TIMEOUT_S:.0f} s:\n{tail}")
        if process.returncode != 0:
            raise StepFailedError(f"{what} exited with {process.returncode}:\n{tail}")
        return out


def wait_for_exit(process: subprocess.Popen[str], timeout_s: float) -> float | None:
    """When ``process`` exited (time.time()), to the millisecond; None if it did not in time.

    A pidfd wakes up at the exit itself, where Popen.wait(timeout) polls every 50 ms.
    """
    try:
        descriptor = os.pidfd_open(process.pid)
    except ProcessLookupError:  # already reaped
        return time.time()
    try:
        ready, _, _ = select.select([descriptor], [], [], timeout_s)
        exited_at = time.time()
    finally:
        os.close(descriptor)
    return exited_at if ready else None


def kill_group(process: subprocess.Popen[Any]) -> list[str]:
    """SIGKILL whatever is left of ``process``'s group and reap it; the names of what was."""
    left = group_members(process.pid)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=60)
    return left


def group_members(group: int) -> list[str]:
    """``name (pid)`` of each live process of process group ``group``, from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError):
            text = stat.read_text()
            # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
            name = text[text.index("(") + 1 : text.rindex(")")]
            fields = text[text.rindex(")") + 2 :].split()
            if int(fields[2]) == group and fields[0] != "Z":
                members.append(f"{name} ({stat.parent.name})")
    return sorted(members)


def await_(
    condition: Callable[[], T | None], timeout_s: float, what: str, driver: TimedDriver
) -> T:
    """Poll ``condition`` until it gives a value; fail the step if ``driver`` exits first."""

    def check() -> T | None:
        found = condition()
        if found is None and not driver.running:
            raise StepFailedError(f"{what}: the command exited first:\n{driver.tail()}")
        return found

    try:
        return waiting.wait_until(check, timeout=timeout_s, interval=POLL_S, message=what)
    except TimeoutError as error:
        raise StepFailedError(f"{error}; the command's last lines:\n{driver.tail()}") from None


# --------------------------------------------------------------------------------------------
# Part A: downtime
# --------------------------------------------------------------------------------------------


class PageViews:
    """Part A's topic: page views 20 s of event time apart, produced a slice at a time; the
    oracle's log remembers each event's partition and offset."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.log = oracle.EventLog(bootstrap)
        brokers.create_topic(bootstrap, topic, PARTITIONS)

    @property
    def events(self) -> list[oracle.Event]:
        return self.log.events

    def produce(self, count: int) -> float:
        """The next ``count`` events, in turn over the partitions and articles; seconds."""
        first = len(self.events)
        records = []
        for i in range(first, first + count):
            article, time_ms = ARTICLES[i % len(ARTICLES)], pipelines.BASE_MS + i * EVENT_EVERY_MS
            records.append(
                brokers.Record(
                    i % PARTITIONS,
                    article.encode(),
                    pipelines.event_value(article, time_ms),
                    time_ms,
                )
            )
        started = time.perf_counter()
        self.log.produce(self.topic, records)
        return time.perf_counter() - started

    def ends(self) -> dict[int, int]:
        """Each partition's end offset: the events are the topic's only records."""
        ends = dict.fromkeys(range(PARTITIONS), 0)
        for event in self.events:
            ends[event.partition] = max(ends[event.partition], event.offset + 1)
        return ends

    def watermark_ms(self) -> int:
        """The watermark once every event produced so far has been read."""
        return max(event.time_ms for event in self.events) - DELAY_MS


@dataclass(frozen=True)
class Restart:
    """One restart: what downtime it cost, and where that went."""

    round: int
    kind: str  # "plain" or "upgrade"
    generations: str  # "1" or "1->2"
    downtime_s: float
    produce_s: float
    plan_s: float
    apply_s: float
    start_s: float  # `run` process start -> banner: JVM start and query build
    first_batch_s: float  # banner -> the first commit: query start and first batch
    planned_s: float  # of which banner -> offsets/N: the query starts, plans its batch
    first_batch_rows: int | None  # the first batch's input rows (aggregates query)
    load: float  # the 1-minute load average when the old `run` exited
    others_cpu_s: float  # CPU seconds processes outside this benchmark took during the downtime
    replayed: int = 0  # records the plan reads again below the old end offsets

    @property
    def run_s(self) -> float:
        """offsets/N -> commits/N: the first batch runs and commits."""
        return self.first_batch_s - self.planned_s

    @property
    def other_s(self) -> float:
        """Producing the events, and the gaps between one step's exit and the next's start."""
        return self.downtime_s - (self.plan_s + self.apply_s + self.start_s + self.first_batch_s)


@dataclass
class DowntimeResult:
    connector: str
    events: int
    restarts: list[Restart] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # what was checked, and held
    notes: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    # The busiest processes outside this benchmark during part A: name -> CPU seconds.
    others_by_name: dict[str, float] = field(default_factory=dict)

    def of(self, kind: str) -> list[Restart]:
        return [restart for restart in self.restarts if restart.kind == kind]

    def median(self, kind: str, part: str) -> float:
        return statistics.median(float(getattr(restart, part)) for restart in self.of(kind))

    def ratios(self) -> list[float]:
        plain = {restart.round: restart.downtime_s for restart in self.of("plain")}
        return [up.downtime_s / plain[up.round] for up in self.of("upgrade")]

    def ratio(self) -> float:
        return self.median("upgrade", "downtime_s") / self.median("plain", "downtime_s")

    def to_json(self) -> dict[str, Any]:
        parts = (
            "downtime_s",
            "plan_s",
            "apply_s",
            "start_s",
            "first_batch_s",
            "planned_s",
            "run_s",
            "other_s",
        )
        return {
            "connector": self.connector,
            "events_per_restart": self.events,
            "restarts": [
                {**asdict(r), "run_s": r.run_s, "other_s": r.other_s} for r in self.restarts
            ],
            "medians": {
                kind: {part: self.median(kind, part) for part in parts}
                for kind in ("plain", "upgrade")
            },
            "ratios": self.ratios(),
            "ratio_of_medians": self.ratio(),
            "target": TARGET_RATIO,
            "target_met": self.ratio() <= TARGET_RATIO,
            "checks": self.checks,
            "notes": self.notes,
            "others_cpu_s_by_name": self.others_by_name,
        }


class Pipeline:
    """The pipeline of part A: its versions' settings, its generations' checkpoints."""

    def __init__(self, work: Path, bootstrap: str, topic: str, connector: str) -> None:
        self.root = work / "pipeline"
        # The tests' settings name the connector under test: this run's replaces it.
        tests = pipelines.pipeline_overrides(work, bootstrap, topic)
        self.base = [
            *(override for override in tests if not override.startswith("kafka.connector=")),
            f"kafka.connector={connector}",
            # Two cores: eight state partitions (the default) would only cost time.
            "pipeline.state_partitions=2",
        ]

    def options(self, version_number: int) -> list[str]:
        metrics = dict(METRICS[:version_number])
        overrides = [*self.base, f"aggregation.metrics={json.dumps(metrics)}"]
        return [f"--set={override}" for override in overrides]

    def run(self, version_number: int) -> list[str]:
        return [*self.options(version_number), "run", "--master=local[2]"]

    def checkpoint(self, generation: int) -> Path:
        return self.root / "checkpoints" / f"generation-{generation}" / "aggregates"


def measure_downtime(
    work: Path, bootstrap: str, rounds: int, events: int, connector: str
) -> DowntimeResult:
    topic = brokers.unique_topic("bench-upgrade")
    stream = PageViews(bootstrap, topic)
    pipeline = Pipeline(work, bootstrap, topic, connector)
    commands = Commands(work)
    result = DowntimeResult(connector, events)
    say(f"part A: topic {topic}, {PARTITIONS} partitions, connector {connector}")
    others = ForeignCpu()
    try:
        _measure_downtime(stream, pipeline, commands, result, others, rounds, events)
    finally:
        others.stop()
    busiest = sorted(others.by_name.items(), key=lambda item: -item[1])
    result.others_by_name = {name: round(cpu, 1) for name, cpu in busiest[:5] if cpu >= 0.1}
    return result


def _measure_downtime(
    stream: PageViews,
    pipeline: Pipeline,
    commands: Commands,
    result: DowntimeResult,
    others: ForeignCpu,
    rounds: int,
    events: int,
) -> None:
    work = commands.work

    say(f"warm-up: {FIRST_EVENTS} events; `run` (generation 1, version 1) until it has them")
    stream.produce(FIRST_EVENTS)
    with commands.launched(pipeline.run(1)) as driver:
        first_commit(driver, pipeline.checkpoint(1), 1, after=None, what="warm-up run")
        exited_at = settle_and_stop(driver, pipeline.checkpoint(1), stream, "warm-up run", result)

    generation = version_number = 1
    for round_ in range(1, rounds + 1):
        say(f"round {round_}/{rounds}: plain restart of generation {generation}")
        checkpoint = pipeline.checkpoint(generation)
        last = oracle.committed_batches(checkpoint)[-1]
        load = os.getloadavg()[0]
        produce_s = stream.produce(events)
        with commands.launched(pipeline.run(version_number)) as driver:
            what = f"round {round_}, plain restart"
            started = first_commit(driver, checkpoint, generation, after=last, what=what)
            next_exit = settle_and_stop(driver, checkpoint, stream, what, result)
        plain = Restart(
            round=round_,
            kind="plain",
            generations=str(generation),
            downtime_s=started.commit_at - exited_at,
            produce_s=produce_s,
            plan_s=0.0,
            apply_s=0.0,
            start_s=started.banner_at - driver.started_at,
            first_batch_s=started.commit_at - started.banner_at,
            planned_s=started.planned_at - started.banner_at,
            first_batch_rows=batch_rows(driver, started.batch),
            load=load,
            others_cpu_s=others.between(exited_at, started.commit_at),
        )
        result.restarts.append(plain)
        say(f"  {describe(plain)}")
        exited_at = next_exit

        say(f"round {round_}/{rounds}: upgrade to generation {generation + 1}")
        what = f"round {round_}, upgrade"
        old_ends, old_watermark = stream.ends(), stream.watermark_ms()
        old_events = list(stream.events)
        load = os.getloadavg()[0]
        produce_s = stream.produce(events)
        new_version = version_number + 1
        plan_file = work / f"upgrade-{generation}-to-{generation + 1}.json"
        plan_s, _, plan_jvm = commands.timed(
            [*pipeline.options(new_version), "upgrade", "plan", "--out", str(plan_file)],
            f"{what}: upgrade plan",
        )
        apply_s, applied, apply_jvm = commands.timed(
            [*pipeline.options(new_version), "upgrade", "apply", str(plan_file)],
            f"{what}: upgrade apply",
        )
        for command, jvm in (("plan", plan_jvm), ("apply", apply_jvm)):
            if jvm:
                result.notes.append(f"{what}: `upgrade {command}` started a JVM (java)")
        expected = f"generation {generation} retired; generation {generation + 1} planned"
        if expected not in applied:
            result.wrong.append(f"{what}: `upgrade apply` did not say {expected!r}:\n{applied}")
        checkpoint = pipeline.checkpoint(generation + 1)
        with commands.launched(pipeline.run(new_version)) as driver:
            started = first_commit(driver, checkpoint, generation + 1, after=None, what=what)
            next_exit = settle_and_stop(driver, checkpoint, stream, what, result)
        # The library's own record: a change to the plan's JSON is read, or refused, as
        # `upgrade apply` reads it, never met as a missing key.
        plan = UpgradePlan.from_json(json.loads(plan_file.read_text()))
        problems = check_plan(plan, generation, old_events, old_ends, old_watermark, stream)
        result.wrong += [f"{what}: {problem}" for problem in problems]
        if not problems:
            result.checks.append(
                f"plan {generation}->{generation + 1}: W, old end offsets, restart offsets "
                "and scan counts as computed from the events"
            )
        upgrade = Restart(
            round=round_,
            kind="upgrade",
            generations=f"{generation}->{generation + 1}",
            downtime_s=started.commit_at - exited_at,
            produce_s=produce_s,
            plan_s=plan_s,
            apply_s=apply_s,
            start_s=started.banner_at - driver.started_at,
            first_batch_s=started.commit_at - started.banner_at,
            planned_s=started.planned_at - started.banner_at,
            first_batch_rows=batch_rows(driver, started.batch),
            load=load,
            others_cpu_s=others.between(exited_at, started.commit_at),
            replayed=plan.records_to_replay or 0,
        )
        result.restarts.append(upgrade)
        say(f"  {describe(upgrade)}")
        exited_at = next_exit
        generation, version_number = generation + 1, new_version

    if not any("started a JVM" in note for note in result.notes):
        result.checks.append(
            "no JVM ran in `upgrade plan` or `upgrade apply` (their process groups sampled "
            "every 50 ms)"
        )
    say("checking the output of every generation against the events (output show) ...")
    check_output(commands, pipeline, stream, generation, version_number, result)


def describe(restart: Restart) -> str:
    steps = f"plan {restart.plan_s:.2f} s, apply {restart.apply_s:.2f} s, " * (
        restart.kind == "upgrade"
    )
    return (
        f"downtime {restart.downtime_s:.2f} s: {steps}JVM+query {restart.start_s:.2f} s, "
        f"first batch {restart.first_batch_s:.2f} s (start {restart.planned_s:.2f} s, run "
        f"{restart.run_s:.2f} s, {restart.first_batch_rows} rows); load {restart.load:.1f}, "
        f"others took {restart.others_cpu_s:.1f} CPU s"
    )


@dataclass(frozen=True)
class Started:
    """When a `run` printed its banner, wrote its first batch's offsets/N (the batch is
    planned) and its commits/N (the batch is done): time.time(), from the files' mtimes."""

    batch: int
    banner_at: float
    planned_at: float
    commit_at: float


def first_commit(
    driver: TimedDriver, checkpoint: Path, generation: int, *, after: int | None, what: str
) -> Started:
    """Wait for the first commit after batch ``after``; the banner must name ``generation``."""

    def committed() -> Path | None:
        batches = [b for b in oracle.committed_batches(checkpoint) if after is None or b > after]
        return checkpoint / "commits" / str(batches[0]) if batches else None

    path = await_(committed, START_TIMEOUT_S, f"{what}: a new commit in {checkpoint}", driver)
    batch = int(path.name)
    return Started(
        batch=batch,
        banner_at=banner(driver, generation, what),
        planned_at=(checkpoint / "offsets" / str(batch)).stat().st_mtime,
        commit_at=path.stat().st_mtime,
    )


def banner(driver: TimedDriver, generation: int, what: str) -> float:
    """When ``run`` printed its banner; it must name ``generation``."""

    def printed() -> tuple[float, str] | None:
        return next(((at, line) for at, line in driver.stamped if BANNER.search(line)), None)

    at, line = await_(printed, 10, f"{what}: the banner `running generation`", driver)
    match = BANNER.search(line)
    assert match is not None
    if int(match.group(1)) != generation:
        raise StepFailedError(f"{what}: expected generation {generation}, `run` said: {line}")
    return at


def batch_rows(driver: TimedDriver, batch: int) -> int | None:
    """The input rows of the aggregates query's ``batch``, from its console line."""
    line = re.compile(rf"^batch {batch}  aggregates  rows ([\d,]+)")
    for text in driver.lines:
        match = line.match(text)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


def settle_and_stop(
    driver: TimedDriver, checkpoint: Path, stream: PageViews, what: str, result: DowntimeResult
) -> float:
    """Let ``run`` commit every event and catch its watermark up, SIGTERM it, and return
    when it exited (time.time())."""
    ends, watermark = stream.ends(), stream.watermark_ms()

    def caught_up() -> bool | None:
        batches = oracle.committed_batches(checkpoint)
        if not batches:
            return None
        read = oracle.end_offsets(checkpoint, batches[-1]).get(stream.topic, {})
        done = read == ends and oracle.batch_watermark_ms(checkpoint, batches[-1]) == watermark
        return True if done else None

    await_(
        caught_up, SETTLE_TIMEOUT_S, f"{what}: every event committed, watermark caught up", driver
    )
    os.kill(driver.process.pid, signal.SIGTERM)  # the driver only: it stops its JVM itself
    exited_at = wait_for_exit(driver.process, STOP_TIMEOUT_S)
    if exited_at is None:
        raise StepFailedError(
            f"{what}: `run` did not stop within {STOP_TIMEOUT_S:.0f} s of SIGTERM"
        )
    code = driver.wait(10)
    if code != 0 or "stopped (stop request)" not in driver.output:
        raise StepFailedError(f"{what}: `run` exited with {code} after SIGTERM:\n{driver.tail()}")
    left = kill_group(driver.process)
    if left:
        result.notes.append(f"{what}: left in `run`'s group at its exit, killed: {', '.join(left)}")
    return exited_at


def check_plan(
    plan: UpgradePlan,
    generation: int,
    old_events: Sequence[oracle.Event],
    old_ends: dict[int, int],
    watermark: int,
    stream: PageViews,
) -> list[str]:
    """The plan against the events as produced: what it says must follow from them alone."""
    wrong = []
    moves = (plan.from_generation, plan.to_generation)
    if moves != (generation, generation + 1):
        wrong.append(f"the plan moves generations {moves}, expected {(generation, generation + 1)}")
    if plan.watermark_ms != watermark:
        wrong.append(f"W = {plan.watermark_ms}, expected {watermark} (newest event - delay)")
    t_min = watermark - watermark % WINDOW_MS  # the start of the window W falls in
    new_events = stream.events[len(old_events) :]
    partitions = {part.partition: part for part in plan.partitions}
    if sorted(partitions) != list(range(PARTITIONS)):
        wrong.append(f"the plan has partitions {sorted(partitions)}")
    for number, part in sorted(partitions.items()):
        mine = [event for event in old_events if event.partition == number]
        restart = next((e.offset for e in mine if e.time_ms >= t_min), old_ends[number])
        found = (part.old_end_offset, part.restart_offset)
        if found != (old_ends[number], restart):
            wrong.append(
                f"partition {number}: old end and restart offsets {found}, expected "
                f"{(old_ends[number], restart)} (T_min {oracle.clock(t_min)})"
            )
        scan = part.replay_scan
        if scan is not None:
            start = scan.batch_level_offset
            feeding = sum(1 for e in mine if e.offset >= start and e.time_ms >= t_min)
            if (scan.feeding_records, scan.malformed_records) != (feeding, 0):
                wrong.append(f"partition {number}: replay scan {scan}, expected {feeding} feeding")
        waiting_scan = part.waiting_scan
        arrived = sum(1 for event in new_events if event.partition == number)
        if waiting_scan is None or (
            waiting_scan.scanned_records,
            waiting_scan.late_records,
        ) != (arrived, 0):
            wrong.append(
                f"partition {number}: waiting scan {waiting_scan}, expected {arrived}, 0 late"
            )
    return wrong


def check_output(
    commands: Commands,
    pipeline: Pipeline,
    stream: PageViews,
    last_generation: int,
    version_number: int,
    result: DowntimeResult,
) -> None:
    """Every window that can be written was, once, with every one of its events."""
    for generation in range(1, last_generation + 1):
        if not oracle.committed_batches(pipeline.checkpoint(generation)):
            result.wrong.append(f"generation {generation} committed no batch")
    shown = json.loads(
        commands.stdout_of(
            [*pipeline.options(version_number), "output", "show", "--json", "--limit", "100000000"],
            "output show --json",
        )
    )
    written: dict[str, list[tuple[int, str, int]]] = {}
    for row in shown["rows"]:
        written.setdefault(f"generation {row['generation']}", []).append(
            (oracle.parse_time(str(row["window_start"])), str(row["article_id"]), int(row["views"]))
        )
    through = oracle.final_watermark_ms(pipeline.checkpoint(last_generation))
    expected = oracle.expected_counts(stream.events, GRID, written_through_ms=through)
    comparison = oracle.Comparison(expected, written, stream.events, GRID)
    by_generation = ", ".join(f"{name} {len(rows)}" for name, rows in sorted(written.items()))
    if comparison.exact:
        result.checks.append(
            f"output: {sum(expected.values())} events in {len(expected)} window rows through "
            f"{oracle.clock(through)}, counted once each; no window written twice "
            f"(rows: {by_generation})"
        )
    else:
        result.wrong.append(f"output show against the events:\n{comparison.report()}")


# --------------------------------------------------------------------------------------------
# Part B: the tightening scan at scale
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScanRun:
    workers: int
    mode: str
    seconds: float  # run_scans alone
    process_s: float  # the fresh process, start to exit
    peak_mb: float  # sum of each process's VmHWM
    sampled_mb: float  # the largest sum of VmRSS at one sample
    rusage_mb: float  # the child's ru_maxrss, self + children (the largest child)
    processes: dict[str, int]  # name -> how many
    records: int
    others_cpu_s: float  # CPU seconds processes outside this benchmark took meanwhile

    @property
    def rate(self) -> float:
        return self.records / self.seconds


@dataclass
class ScanResult:
    records: int
    partitions: int
    first_feeding_record: int
    runs: list[ScanRun] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "partitions": self.partitions,
            "first_feeding_record": self.first_feeding_record,
            "runs": [{**asdict(run), "records_per_s": run.rate} for run in self.runs],
            "checks": self.checks,
        }


def scan_record(j: int, partitions: int) -> brokers.Record:
    """Page view number ``j`` of part B: partition j mod partitions, 100 ms after j - 1."""
    article, time_ms = ARTICLES[j % len(ARTICLES)], pipelines.BASE_MS + j * harness.EVENT_STEP_MS
    return brokers.Record(
        j % partitions, article.encode(), pipelines.event_value(article, time_ms), time_ms
    )


def measure_scans(work: Path, bootstrap: str, records: int, partitions: int) -> ScanResult:
    topic = brokers.unique_topic("bench-upgrade-scan")
    say(f"part B: filling {topic}: {records:,} page views in {partitions} partitions ...")
    started = time.monotonic()
    last_said = [started]

    def filled(done: int) -> None:
        now = time.monotonic()
        if now - last_said[0] >= 10 or done == records:
            last_said[0] = now
            rate = done / max(now - started, 1e-9)
            say(f"  produced {done:,} of {records:,} ({rate:,.0f} records/s)")

    harness.fill_topic_reporting(
        bootstrap,
        topic,
        records,
        partitions,
        lambda indices: [scan_record(j, partitions) for j in indices],
        filled,
    )
    ends = {p: len(range(p, records, partitions)) for p in range(partitions)}
    settings = load_settings(
        PROJECT, env={}, overrides=[f"kafka.bootstrap_servers={bootstrap}", f"kafka.topics={topic}"]
    ).settings
    broker = open_broker(settings)
    try:
        latest = broker.latest([(topic, p) for p in range(partitions)])
    finally:
        broker.close()
    if latest != {(topic, p): end for p, end in ends.items()}:
        raise StepFailedError(f"the topic ends at {latest}, expected {ends}")

    first_feeding = records - max(partitions, records // SCAN_TAIL)
    t_min = pipelines.BASE_MS + first_feeding * harness.EVENT_STEP_MS
    result = ScanResult(records, partitions, first_feeding)
    expected = expected_scans(records, partitions, first_feeding)
    spec = {"bootstrap": bootstrap, "topic": topic, "ends": ends, "t_min": t_min}
    for workers in VARIANTS:
        say(f"scan, workers={workers}: {records:,} records in a fresh process ...")
        run, found = run_scan_child(work, {**spec, "workers": workers}, records)
        say(
            f"  {run.seconds:.1f} s, {run.rate:,.0f} records/s, peak {run.peak_mb:,.0f} MB "
            f"({run.mode})"
        )
        result.runs.append(run)
        if found == expected:
            result.checks.append(
                f"scan workers={workers}: every partition's first feeding offset, scanned, "
                "feeding and replayed counts as produced"
            )
        else:
            result.wrong.append(f"scan workers={workers}: found {found}, expected {expected}")
    return result


def expected_scans(records: int, partitions: int, first_feeding: int) -> dict[int, dict[str, int]]:
    """Per partition, what a scan of [0, end) with T_min at record ``first_feeding`` finds."""
    expected = {}
    for p in range(partitions):
        end = len(range(p, records, partitions))
        first = first_feeding + (p - first_feeding) % partitions  # its first record >= that
        offset = first // partitions if first < records else end
        expected[p] = {
            "batch_level_offset": 0,
            "tightened_offset": offset,
            "end_offset": end,
            "scanned_records": end,
            "malformed_records": 0,
            "replayed_records": end - offset,
            "feeding_records": end - offset,
            "unsure_records": 0,
        }
    return expected


# The child imports this module with -c: spawned workers then re-import no main script, as
# with `python -m pyspark_kafka_upgrade upgrade plan`, and import only what they unpickle.
CHILD = (
    "import sys; sys.path[:0] = {path!r}; "
    "from bench.upgrade_downtime import scan_child; raise SystemExit(scan_child(sys.argv[1]))"
)


def run_scan_child(
    work: Path, spec: dict[str, Any], records: int
) -> tuple[ScanRun, dict[int, dict[str, int]]]:
    others = ForeignCpu()
    started, started_at = time.monotonic(), time.time()
    try:
        with subprocess.Popen(
            [sys.executable, "-c", CHILD.format(path=SEARCH_PATH), json.dumps(spec)],
            cwd=work,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as process:
            sampler = TreeMemorySampler(process.pid)
            try:
                out, _ = process.communicate(timeout=SCAN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise StepFailedError(
                    f"the scan did not end within {SCAN_TIMEOUT_S:.0f} s"
                ) from None
            finally:
                memory = sampler.stop()
                kill_group(process)
        process_s = time.monotonic() - started
    finally:
        others.stop()
    others_cpu_s = others.between(started_at, started_at + process_s)
    if process.returncode != 0:
        raise StepFailedError(
            f"the scan with workers={spec['workers']} exited with {process.returncode}"
        )
    told = json.loads(out.strip().splitlines()[-1])
    names: dict[str, int] = {}
    for name in memory.names.values():
        names[name] = names.get(name, 0) + 1
    run = ScanRun(
        workers=int(spec["workers"]),
        mode=str(told["mode"]),
        seconds=float(told["seconds"]),
        process_s=process_s,
        peak_mb=memory.hwm_mb,
        sampled_mb=memory.rss_mb,
        rusage_mb=(int(told["maxrss_self_kb"]) + int(told["maxrss_children_kb"])) / 1024,
        processes=names,
        records=records,
        others_cpu_s=others_cpu_s,
    )
    found = {int(scan["partition"]): scan for scan in told["partitions"]}
    for scan in found.values():
        scan.pop("topic")
        scan.pop("partition")
    return run, found


def scan_child(spec_text: str) -> int:
    """In a fresh process: one run_scans over the spec's ranges; JSON on stdout."""
    spec = json.loads(spec_text)
    topic, workers = str(spec["topic"]), int(spec["workers"])
    settings = load_settings(
        PROJECT,
        env={},
        overrides=[f"kafka.bootstrap_servers={spec['bootstrap']}", f"kafka.topics={topic}"],
    ).settings
    source = event_scan.EventSource(
        options=source_options(settings),
        events=settings.project.events,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )
    ranges = tuple(
        ScanRange((topic, int(number)), 0, int(end)) for number, end in spec["ends"].items()
    )
    request = ScanRequest(
        t_min=int(spec["t_min"]), replay=ranges, late_before_event_ms=None, waiting=()
    )
    parallel = (
        workers > 1 and request.records >= event_scan.PARALLEL_FROM_RECORDS and len(ranges) > 1
    )
    mode = f"{min(workers, len(ranges))} worker processes" if parallel else "in-process"
    started = time.perf_counter()
    results = event_scan.run_scans(
        request, source, progress=lambda line: say(f"  workers={workers}: {line}"), workers=workers
    )
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "mode": mode,
                "seconds": seconds,
                "partitions": [scan.to_json() for scan in results.replay.values()],
                # Linux reports kB; for children, the largest one that was waited for.
                "maxrss_self_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "maxrss_children_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
            }
        ),
        flush=True,
    )
    return 0


# --------------------------------------------------------------------------------------------
# What /proc says (Linux): a process tree's memory, and the CPU other processes take
# --------------------------------------------------------------------------------------------


@dataclass
class TreeMemory:
    """Memory of a process and every process below it, as sampled from /proc.

    ``peak_hwm_kb`` holds each process's own peak (VmHWM, the kernel's high-water mark); its
    sum is an upper bound of the tree's peak, exact when its processes peak together.
    ``peak_rss_kb`` is the largest sum of VmRSS seen at one sample: a lower bound. Both
    count pages shared between processes (libraries, copy-on-write) once per process.
    """

    peak_hwm_kb: dict[int, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    peak_rss_kb: int = 0

    @property
    def hwm_mb(self) -> float:
        return sum(self.peak_hwm_kb.values()) / 1024

    @property
    def rss_mb(self) -> float:
        return self.peak_rss_kb / 1024


class TreeMemorySampler:
    """Samples the :class:`TreeMemory` of ``pid``'s tree in a thread until :meth:`stop`."""

    def __init__(self, pid: int, interval_s: float = 0.1) -> None:
        self.memory = TreeMemory()
        self._root = pid
        self._interval_s = interval_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_done, daemon=True)
        self._thread.start()

    def stop(self) -> TreeMemory:
        self._done.set()
        self._thread.join(timeout=10)
        return self.memory

    def _sample_until_done(self) -> None:
        while True:
            self._sample()
            if self._done.wait(self._interval_s):
                return

    def _sample(self) -> None:
        total = 0
        for pid in _tree(self._root):
            status = _status(pid)
            if not status:
                continue  # gone between the listing and the read
            hwm, rss = _kb(status.get("VmHWM")), _kb(status.get("VmRSS"))
            self.memory.peak_hwm_kb[pid] = max(hwm, self.memory.peak_hwm_kb.get(pid, 0))
            self.memory.names[pid] = status.get("Name", "?")
            total += rss
        self.memory.peak_rss_kb = max(self.memory.peak_rss_kb, total)


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, through each thread's ``children`` list."""
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            with suppress(OSError):
                pending += [int(child) for child in children.read_text().split()]
    return found


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    fields = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {name: value.strip() for name, value in fields}


def _kb(value: str | None) -> int:
    """``"123456 kB"`` as 123456; absent (a zombie, a kernel thread) as 0."""
    return int(value.split()[0]) if value else 0


class ForeignCpu:
    """CPU time taken by processes outside this process's tree, sampled from /proc.

    A benchmark on a shared machine is as quiet as the machine: this says how much CPU
    others took during a measured interval (:meth:`between`). A process that starts and
    ends between two samples is missed, so it is a lower bound.
    """

    def __init__(self, interval_s: float = 0.5) -> None:
        self._interval_s = interval_s
        self._ticks_per_s = os.sysconf("SC_CLK_TCK")
        self._started_ticks = float(Path("/proc/uptime").read_text().split()[0]) * (
            self._ticks_per_s
        )
        self._seen: dict[int, int] = {}  # pid -> its utime + stime at the last sample
        # Ours once, ours for good: a JVM outliving its driver is reparented, not foreign.
        self._ours: set[int] = set()
        self._total = 0  # foreign ticks so far
        self.by_name: dict[str, float] = {}  # foreign CPU seconds by process name
        self.timeline: list[tuple[float, float]] = []  # (time.time(), foreign CPU s so far)
        self._done = threading.Event()
        self._sample()
        self._thread = threading.Thread(target=self._sample_until_done, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)

    def between(self, start: float, end: float) -> float:
        """Foreign CPU seconds between two time.time() moments, interpolated."""
        return self._at(end) - self._at(start)

    def _at(self, moment: float) -> float:
        timeline = list(self.timeline)
        if not timeline or moment <= timeline[0][0]:
            return 0.0
        for (t0, c0), (t1, c1) in itertools.pairwise(timeline):
            if moment <= t1:
                return c0 + (c1 - c0) * (moment - t0) / max(t1 - t0, 1e-9)
        return timeline[-1][1]

    def _sample_until_done(self) -> None:
        while not self._done.wait(self._interval_s):
            self._sample()

    def _sample(self) -> None:
        stats = _all_stats()
        self._ours |= _descendants(os.getpid(), stats)
        for pid, (_, ticks, started, name) in stats.items():
            if pid in self._ours:
                continue
            before = self._seen.get(pid)
            if before is None:
                # New since the last sample: all of its CPU if it started after us.
                before = 0 if started > self._started_ticks else ticks
            used = max(0, ticks - before)
            self._total += used
            self._seen[pid] = ticks
            if used:
                self.by_name[name] = self.by_name.get(name, 0.0) + used / self._ticks_per_s
        self.timeline.append((time.time(), self._total / self._ticks_per_s))


def _all_stats() -> dict[int, tuple[int, int, int, str]]:
    """pid -> (ppid, utime + stime, start time, name), times in clock ticks, of every
    process."""
    stats = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError):
            text = stat.read_text()
            # pid (comm) state ppid ...: comm may hold spaces and parentheses.
            fields = text[text.rindex(")") + 2 :].split()
            stats[int(stat.parent.name)] = (
                int(fields[1]),
                int(fields[11]) + int(fields[12]),
                int(fields[19]),
                text[text.index("(") + 1 : text.rindex(")")],
            )
    return stats


def _descendants(root: int, stats: dict[int, tuple[int, int, int, str]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found, pending = set(), [root]
    while pending:
        pid = pending.pop()
        found.add(pid)
        pending += children.get(pid, [])
    return found


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def report(result: dict[str, Any]) -> None:
    print(f"\nbroker: {result['broker']}")
    print(", ".join(f"{name} {number}" for name, number in result["versions"].items()))
    if "downtime" in result:
        report_downtime(result["downtime"])
    if "scan" in result:
        report_scan(result["scan"])


def report_downtime(downtime: dict[str, Any]) -> None:
    print(
        f"\nPart A: downtime, connector {downtime['connector']}, {PARTITIONS} partitions, "
        f"{downtime['events_per_restart']} new events before each restart "
        f"({downtime['wall_s']:.0f} s wall)"
    )
    print(
        "downtime     old `run` exited -> the next one's first commits/N\n"
        "JVM+query    `run` process started -> its banner `running generation`\n"
        "1st batch    banner -> commits/N = start (banner -> offsets/N: the query starts and "
        "plans the batch)\n             + run (offsets/N -> commits/N: the batch runs)\n"
        "other        producing the new events, and the gaps between the commands\n"
        "rows         the first batch's input rows; replayed: records the plan reads again\n"
        "load         1-minute load average of the machine (2 cores) when the old run exited\n"
        "others       CPU seconds taken by processes outside this benchmark during the downtime"
    )
    columns = (
        ("downtime s", "downtime_s"),
        ("plan s", "plan_s"),
        ("apply s", "apply_s"),
        ("JVM+query s", "start_s"),
        ("1st batch s", "first_batch_s"),
        ("start s", "planned_s"),
        ("run s", "run_s"),
        ("other s", "other_s"),
    )
    only_upgrade = {"plan_s", "apply_s"}
    header = f"{'round':<7}{'restart':<9}{'gen':<6}" + "".join(
        f"{title:>{len(title) + 2}}" for title, _ in columns
    )
    print(f"\n{header}{'rows':>6}{'replayed':>10}{'load':>6}{'others':>8}")
    for r in downtime["restarts"]:
        upgrade = r["kind"] == "upgrade"
        cells = "".join(
            f"{_cell(r[key], upgrade or key not in only_upgrade):>{len(title) + 2}}"
            for title, key in columns
        )
        rows = "?" if r["first_batch_rows"] is None else r["first_batch_rows"]
        replayed = r["replayed"] if upgrade else "-"
        print(
            f"{r['round']:<7}{r['kind']:<9}{r['generations']:<6}{cells}{rows:>6}"
            f"{replayed:>10}{r['load']:>6.1f}{r['others_cpu_s']:>8.1f}"
        )
    for kind, medians in downtime["medians"].items():
        upgrade = kind == "upgrade"
        cells = "".join(
            f"{_cell(medians[key], upgrade or key not in only_upgrade):>{len(title) + 2}}"
            for title, key in columns
        )
        print(f"{'median':<7}{kind:<9}{'':<6}{cells}")
    print("\nupgrade/plain per round: " + ", ".join(f"{x:.2f}x" for x in downtime["ratios"]))
    verdict = "met" if downtime["target_met"] else "missed"
    print(
        f"upgrade/plain = {downtime['ratio_of_medians']:.2f}x (medians), "
        f"target <= {downtime['target']:.1f}x: {verdict}"
    )
    disturbed = [r for r in downtime["restarts"] if r["others_cpu_s"] >= DISTURBED_CPU_S]
    if disturbed:
        print(
            f"shared machine: other processes took >= {DISTURBED_CPU_S:.0f} CPU s during "
            + ", ".join(
                f"round {r['round']} {r['kind']} ({r['others_cpu_s']:.1f} s)" for r in disturbed
            )
        )
        quiet = sorted({r["round"] for r in downtime["restarts"]} - {r["round"] for r in disturbed})
        if quiet:
            by_round = {(r["round"], r["kind"]): r["downtime_s"] for r in downtime["restarts"]}
            ratio = statistics.median(by_round[(n, "upgrade")] for n in quiet) / statistics.median(
                by_round[(n, "plain")] for n in quiet
            )
            print(f"  rounds where neither was disturbed ({len(quiet)}): {ratio:.2f}x (medians)")
    plain, upgrade = downtime["medians"]["plain"], downtime["medians"]["upgrade"]
    extra = upgrade["downtime_s"] - plain["downtime_s"]
    print(
        f"the upgrade's extra downtime (medians): {extra:+.2f} s = plan + apply "
        f"{upgrade['plan_s'] + upgrade['apply_s']:.2f} s, JVM+query "
        f"{upgrade['start_s'] - plain['start_s']:+.2f} s, 1st batch "
        f"{upgrade['first_batch_s'] - plain['first_batch_s']:+.2f} s (start "
        f"{upgrade['planned_s'] - plain['planned_s']:+.2f} s, run "
        f"{upgrade['run_s'] - plain['run_s']:+.2f} s), other "
        f"{upgrade['other_s'] - plain['other_s']:+.2f} s"
    )
    if downtime["others_cpu_s_by_name"]:
        busiest = downtime["others_cpu_s_by_name"].items()
        print(
            "processes outside this benchmark during part A took: "
            + ", ".join(f"{name} {cpu:.1f} CPU s" for name, cpu in busiest)
        )
    for check in downtime["checks"]:
        print(f"  checked: {check}")
    for note in downtime["notes"]:
        print(f"  note: {note}")


def _cell(value: float, shown: bool) -> str:
    return f"{value:.2f}" if shown else "-"


def report_scan(scan: dict[str, Any]) -> None:
    print(
        f"\nPart B: the tightening scan (event_scan.run_scans), {scan['records']:,} records in "
        f"{scan['partitions']} partitions, first feeding record {scan['first_feeding_record']:,} "
        f"({scan['wall_s']:.0f} s wall, filling included)"
    )
    print(
        "peak MB: the sum of each process's VmHWM (the scanning process, its workers and "
        "multiprocessing's helper); sampled: the largest sum of VmRSS seen at once;\nothers: "
        "CPU seconds taken meanwhile by processes outside this benchmark"
    )
    print(
        f"\n{'workers':<9}{'mode':<22}{'scan s':>8}{'records/s':>12}{'process s':>11}"
        f"{'peak MB':>9}{'sampled MB':>12}{'others':>8}  processes"
    )
    for run in scan["runs"]:
        processes = ", ".join(f"{count} {name}" for name, count in sorted(run["processes"].items()))
        print(
            f"{run['workers']:<9}{run['mode']:<22}{run['seconds']:>8.1f}"
            f"{run['records_per_s']:>12,.0f}{run['process_s']:>11.1f}{run['peak_mb']:>9,.0f}"
            f"{run['sampled_mb']:>12,.0f}{run['others_cpu_s']:>8.1f}  {processes}"
        )
    runs = {run["workers"]: run for run in scan["runs"]}
    if 1 in runs and 2 in runs:
        speed = runs[2]["records_per_s"] / runs[1]["records_per_s"]
        memory = runs[2]["peak_mb"] / runs[1]["peak_mb"]
        print(f"\nworkers=2 / workers=1: {speed:.2f}x records/s, {memory:.2f}x peak memory")
    for check in scan["checks"]:
        print(f"  checked: {check}")


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except StepFailedError as error:
        print(f"bench-upgrade: a step failed: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    except (brokers.KafkaBackendError, PipelineError) as error:
        # No broker, no Maven, no connector: one line that says which, not a traceback.
        print(f"bench-upgrade: {error}", file=sys.stderr)
        raise SystemExit(2) from None
