"""Downtime of an upgrade onto a new checkpoint ÷ downtime of a plain restart, per connector.

`upgrade plan` and `upgrade apply` start no JVM, so an upgrade should keep the pipeline down
about as long as a plain restart. Every command is the reference pipeline's CLI in a process
of its own, as an operator runs it, on the run's broker: a topic of 2 partitions, page views
20 s of event time apart, 10-minute windows, a 5-minute watermark delay, a trigger a second.
Version n aggregates the first n METRICS, so every upgrade needs a new generation.

Downtime: from the old `run` process's exit (SIGTERM, graceful) to the first commits/N file
in the next run's generation checkpoint. An untimed warm-up `run` commits the first events;
then each round, in alternating order, new events and at once either `run` again with the
same settings (plain), or `upgrade plan --out PLAN`, `upgrade apply PLAN` and `run` with the
next version (upgrade). Each `run` goes on until it has every event and its watermark has
caught up, then gets SIGTERM. Quick: 50 events, then 15 per restart (at the upgrade a window
is written, the next open), 1 round, the Delta pipeline only; full: 120, then 30, 5 rounds
(one restart's downtime varies by a quarter on two shared cores: a median of 3 can be a
slow round's, one of 5 outlasts two). Also measured: the seconds of `upgrade plan` and
`upgrade apply`, and the plan's records replayed ÷ records feeding open windows.

The same again with the Delta sink (`sink.format=delta`, the pykafka connector: one is
enough), as `upgrade.downtime.delta`: the upgrade on Delta ÷ a plain restart on Delta. Every
generation appends to the one table, each batch a Delta commit before the checkpoint's, so
the downtime ends where the file sink's does, at the first commits/N.

Checked: every exit code; each plan against the events as produced (W, old end offsets,
restart offsets, the scans' counts); no JVM in the process tree of `upgrade plan` or
`upgrade apply` (psutil, every 20 ms); at the end `output show --json` against the oracle:
no event lost or counted twice, no window written by two generations. On Delta the rows are
read from the table with delta-rs instead (`DeltaTable(...).to_pyarrow_table()`, no JVM).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

import psutil

import pyspark_kafka_upgrade.testing._driver_process as driver_process
import pyspark_kafka_upgrade.testing._oracle as oracle
import pyspark_kafka_upgrade.testing._waiting as waiting
from bench.kit.context import Benchmark, Connector, Context, Result
from bench.kit.timing import ratios, side_by_side
from bench.record import Figure, Series, Target
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.values.layout import table_location
from support import pipelines

T = TypeVar("T")
LABELS: dict[Connector, str] = {"python": "pykafka", "builtin": "builtin"}
SinkFormat = Literal["parquet", "delta"]
ARTICLES = ("a1", "a2", "a3")
PARTITIONS = 2
EVENT_EVERY_MS = 20_000
WINDOW_MS = 10 * pipelines.MINUTE_MS
DELAY_MS = 5 * pipelines.MINUTE_MS
METRICS = (
    ("views", "count(*)"),
    ("users", "approx_count_distinct(user_id)"),
    ("first_user", "min(user_id)"),
    ("last_user", "max(user_id)"),
    ("identified", "count(user_id)"),
    ("first_view", "min(event_time)"),
)  # each upgrade adds the next: one more than the full run's rounds
START_TIMEOUT_S = float(driver_process.START_TIMEOUT_S)
SETTLE_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 180.0  # the batch in flight commits first
COMMAND_TIMEOUT_S = 300.0
POLL_S = 0.02


class StepFailedError(Exception):
    """A command exited with a code, or said something, it should not have."""


def run(ctx: Context) -> Result:
    warmup, events, rounds = ctx.size(50, 120), ctx.size(15, 30), ctx.size(1, 5)
    if rounds >= len(METRICS):  # the last round's plan would find nothing to change
        raise ValueError(f"{rounds} rounds need {rounds + 1} metrics, METRICS has {len(METRICS)}")
    figures: list[Figure] = []
    problems: list[str] = []
    chosen: list[tuple[Connector, SinkFormat]] = [(c, "parquet") for c in ctx.connectors]
    if "python" in ctx.connectors:
        chosen.append(("python", "delta"))
        # Quick checks the steps, not the speed, and the Delta pipeline plays them all (the
        # file sink's upgrade is the integration suite's): the others wait for a full run.
        if ctx.quick:
            chosen = [("python", "delta")]
            ctx.say("quick: the Delta pipeline only; the file sink's are measured in a full run")
    else:
        ctx.say("delta left out: it runs with the pykafka connector, which was not chosen")
    for connector, sink_format in chosen:
        pipeline = Pipeline(ctx, connector, sink_format)
        try:
            figures.append(pipeline.measure(warmup, events, rounds))
        except StepFailedError as error:
            pipeline.problems.append(str(error))
        problems += [f"{pipeline.label}: {problem}" for problem in pipeline.problems]
    sizes = {"rounds": rounds, "warm-up events": warmup, "events per restart": events}
    return Result(tuple(figures), tuple(problems), sizes)


class Pipeline:
    """One connector's pipeline into one sink: its topic and events, its generations, its
    commands. ``label`` names it: the connector's, or the sink's when it is not parquet."""

    def __init__(
        self, ctx: Context, connector: Connector, sink_format: SinkFormat = "parquet"
    ) -> None:
        self.ctx, self.sink_format = ctx, sink_format
        self.label = LABELS[connector] if sink_format == "parquet" else sink_format
        self.described = (
            LABELS[connector]
            if sink_format == "parquet"
            else (f"{LABELS[connector]}, {sink_format}")
        )
        self.topic = testing.unique_topic(f"bench-upgrade-{self.label}")
        self.work = ctx.workdir / self.topic
        self.work.mkdir(parents=True)
        self.log = oracle.EventLog(ctx.bootstrap)
        testing.create_topic(ctx.bootstrap, self.topic, PARTITIONS)
        tests = pipelines.pipeline_overrides(self.work, ctx.bootstrap, self.topic)
        self.base = [
            *(override for override in tests if not override.startswith("kafka.connector=")),
            f"kafka.connector={connector}",
            # Two cores: eight state partitions (the default) would only cost time.
            "pipeline.state_partitions=2",
            f"sink.format={sink_format}",
        ]
        self.generation = self.version = 1
        self.exited_at = 0.0  # when the last `run` exited (time.time())
        self.plan_s: list[float] = []
        self.apply_s: list[float] = []
        self.amplification: list[float] = []
        self.problems: list[str] = []

    def measure(self, warmup: int, events: int, rounds: int) -> Figure:
        started = time.monotonic()
        self.ctx.say(f"{self.label}: warm-up (untimed): {warmup} events, `run` generation 1")
        self.produce(warmup)
        self.run_until_settled(after=None)
        downtime = side_by_side(
            {"plain": lambda: self.plain(events), "upgrade": lambda: self.upgrade(events)},
            rounds,
            warmup=0,
            say=lambda line: self.ctx.say(f"{self.label}: {line}"),
        )
        reader = "the table (delta-rs)" if self.sink_format == "delta" else "`output show --json`"
        self.ctx.say(f"{self.label}: checking {reader} against the events")
        self.check_output()
        self.ctx.say(f"{self.label}: measured in {time.monotonic() - started:.0f} s")
        absolute = {
            "plain": Series(tuple(downtime["plain"]), "s"),
            "upgrade": Series(tuple(downtime["upgrade"]), "s"),
            "plan": Series(tuple(self.plan_s), "s"),
            "apply": Series(tuple(self.apply_s), "s"),
        }
        if self.amplification:
            absolute["replayed ÷ feeding"] = Series(tuple(self.amplification), "x")
        return Figure(
            f"upgrade.downtime.{self.label}",
            f"downtime: upgrade ÷ plain restart ({self.described})",
            ratios(downtime["upgrade"], downtime["plain"]),
            Target("<=", 1.1),
            absolute,
        )

    def plain(self, events: int) -> float:
        exited_at = self.exited_at
        last = oracle.committed_batches(self.checkpoint(self.generation))[-1]
        self.produce(events)
        committed_at = self.run_until_settled(after=last)
        self.ctx.say(f"{self.label}:   plain restart: {committed_at - exited_at:.2f} s")
        return committed_at - exited_at

    def upgrade(self, events: int) -> float:
        exited_at, old = self.exited_at, self.generation
        old_events, old_ends, old_watermark = list(self.log.events), self.ends(), self.watermark()
        self.produce(events)
        self.version += 1
        plan_file = self.work / f"plan-{old}-to-{old + 1}.json"
        plan_s, _ = self.command(["upgrade", "plan", "--out", str(plan_file)])
        apply_s, applied = self.command(["upgrade", "apply", str(plan_file)])
        self.generation += 1
        committed_at = self.run_until_settled(after=None)
        expected = f"generation {old} retired; generation {old + 1} planned"
        if expected not in applied:
            self.problems.append(f"`upgrade apply` did not say {expected!r}: {applied[-500:]}")
        # The library's own record: the plan is read as `upgrade apply` reads it.
        plan = UpgradePlan.from_json(json.loads(plan_file.read_text()))
        wrong = check_plan(plan, old, old_events, self.log.events, old_ends, old_watermark)
        self.problems += [f"plan {old}->{old + 1}: {problem}" for problem in wrong]
        feeding = [p.replay_scan.feeding_records for p in plan.partitions if p.replay_scan]
        if plan.records_to_replay is not None and None not in feeding and any(feeding):
            self.amplification.append(plan.records_to_replay / sum(f or 0 for f in feeding))
        self.plan_s.append(plan_s)
        self.apply_s.append(apply_s)
        downtime = committed_at - exited_at
        steps = f"plan {plan_s:.2f} s, apply {apply_s:.2f} s"
        self.ctx.say(f"{self.label}:   upgrade: {downtime:.2f} s ({steps})")
        return downtime

    def run_until_settled(self, *, after: int | None) -> float:
        """`run` the current version until its first commit after batch ``after`` (when:
        that commits/N's mtime), on until it has every event, then SIGTERM it."""
        checkpoint = self.checkpoint(self.generation)
        ends, watermark = self.ends(), self.watermark()

        def committed() -> float | None:
            batches = [
                b for b in oracle.committed_batches(checkpoint) if after is None or b > after
            ]
            return (checkpoint / "commits" / str(batches[0])).stat().st_mtime if batches else None

        def caught_up() -> bool:
            last = oracle.committed_batches(checkpoint)[-1]
            read = oracle.end_offsets(checkpoint, last).get(self.topic, {})
            return read == ends and oracle.batch_watermark_ms(checkpoint, last) == watermark

        arguments = [*self.options(), "run", "--master=local[2]"]
        with driver_process.started(arguments, self.work) as driver:
            committed_at = self.await_(driver, committed, START_TIMEOUT_S, "a new commit")
            self.await_(driver, caught_up, SETTLE_TIMEOUT_S, "every event, the watermark")
            process = psutil.Process(driver.process.pid)
            process.send_signal(signal.SIGTERM)  # the driver only: it stops its JVM itself
            # psutil waits on a pidfd, which wakes at the exit itself (Popen.wait polls), and
            # reaps the driver: its exit code is psutil's, Popen's would read 0.
            code = process.wait(STOP_TIMEOUT_S)
            self.exited_at = time.time()
            driver.wait(10)  # the last of its output
        banner = f": running generation {self.generation} "
        if code != 0 or "stopped (stop request)" not in driver.output:
            raise StepFailedError(f"`run` exited with {code} after SIGTERM: {tail(driver)}")
        if banner not in driver.output:
            raise StepFailedError(f"`run` did not say {banner!r}: {tail(driver)}")
        return committed_at

    def await_(
        self,
        driver: driver_process.DriverProcess,
        condition: Callable[[], T | None],
        timeout_s: float,
        what: str,
    ) -> T:
        def check() -> T | None:
            found = condition()
            if not found and not driver.running:
                code = driver.process.returncode
                raise StepFailedError(f"`run` exited with {code} before {what}: {tail(driver)}")
            return found

        message = f"{self.label}, generation {self.generation}: {what}"
        try:
            return waiting.wait_until(check, timeout=timeout_s, interval=POLL_S, message=message)
        except TimeoutError as error:
            raise TimeoutError(f"{error}; `run` said: {tail(driver)}") from None

    def command(self, arguments: Sequence[str]) -> tuple[float, str]:
        """`upgrade plan` or `upgrade apply` to its end: seconds from its start to its exit,
        and its output. Its process tree is sampled for a JVM meanwhile."""
        what, names = " ".join(arguments[:2]), set[str]()
        started = time.monotonic()
        with driver_process.started([*self.options(), *arguments], self.work) as driver:
            root = psutil.Process(driver.process.pid)

            def ended() -> bool:
                names.update(tree_names(root))
                return not driver.running

            waiting.wait_until(ended, timeout=COMMAND_TIMEOUT_S, interval=POLL_S, message=what)
            seconds = time.monotonic() - started
            code = driver.wait(10)
        if code != 0:
            raise StepFailedError(f"`{what}` exited with {code}: {tail(driver)}")
        if any(name.startswith("java") for name in names):
            self.problems.append(f"`{what}` started a JVM: {sorted(names)}")
        return seconds, driver.output

    def check_output(self) -> None:
        """Every window that can be written was, once, with every one of its events."""
        written = self.table_rows() if self.sink_format == "delta" else self.shown_rows()
        through = oracle.final_watermark_ms(self.checkpoint(self.generation))
        grid = oracle.Grid(WINDOW_MS)
        expected = oracle.expected_counts(self.log.events, grid, written_through_ms=through)
        comparison = oracle.Comparison(expected, written, self.log.events, grid)
        if not comparison.exact:
            self.problems.append(f"the output against the events: {comparison.report()}")

    def table_rows(self) -> dict[str, list[tuple[int, str, int]]]:
        """Each generation's rows in the Delta table, read with delta-rs (no JVM)."""
        from deltalake import DeltaTable

        table = DeltaTable(table_location(str(self.work / "pipeline"))).to_pyarrow_table()
        written: dict[str, list[tuple[int, str, int]]] = {}
        for row in table.select(["generation", "window_start", "article_id", "views"]).to_pylist():
            written.setdefault(f"generation {row['generation']}", []).append(
                (epoch_ms(row["window_start"]), str(row["article_id"]), row["views"])
            )
        return written

    def shown_rows(self) -> dict[str, list[tuple[int, str, int]]]:
        """Each generation's rows as `output show --json` prints them."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        arguments = [*self.options(), "output", "show", "--json", "--limit", "100000000"]
        command = [sys.executable, "-m", driver_process.MODULE, *arguments]
        # Its stdout alone: Spark's warnings go to stderr.
        shown = driver_process.run_in_own_group(
            command, cwd=self.work, env=env, timeout=COMMAND_TIMEOUT_S
        )
        if shown.returncode != 0:
            # A JVM's stack trace ends in frames; its cause is the first line that names one.
            lines = shown.stderr.splitlines()
            cause = next((line for line in lines if "Exception" in line or "Error" in line), "")
            log = self.work / "output-show.stderr"
            log.write_text(shown.stderr)
            raise StepFailedError(
                f"`output show` exited with {shown.returncode}: {cause or lines[-1:]} (all: {log})"
            )
        written: dict[str, list[tuple[int, str, int]]] = {}
        for row in json.loads(shown.stdout)["rows"]:
            written.setdefault(f"generation {row['generation']}", []).append(
                (oracle.parse_time(str(row["window_start"])), str(row["article_id"]), row["views"])
            )
        return written

    def produce(self, count: int) -> None:
        """The next ``count`` events, in turn over the partitions and articles."""
        first = len(self.log.events)
        records = []
        for i in range(first, first + count):
            article, time_ms = ARTICLES[i % len(ARTICLES)], pipelines.BASE_MS + i * EVENT_EVERY_MS
            value = pipelines.event_value(article, time_ms)
            records.append(testing.Record(i % PARTITIONS, article.encode(), value, time_ms))
        self.log.produce(self.topic, records)

    def ends(self) -> dict[int, int]:
        """Each partition's end offset: the events are the topic's only records."""
        ends = dict.fromkeys(range(PARTITIONS), 0)
        for event in self.log.events:
            ends[event.partition] = max(ends[event.partition], event.offset + 1)
        return ends

    def watermark(self) -> int:
        """The watermark once every event produced so far has been read."""
        return max(event.time_ms for event in self.log.events) - DELAY_MS

    def options(self) -> list[str]:
        metrics = json.dumps(dict(METRICS[: self.version]))
        return [f"--set={o}" for o in [*self.base, f"aggregation.metrics={metrics}"]]

    def checkpoint(self, generation: int) -> Path:
        return self.work / "pipeline" / "checkpoints" / f"generation-{generation}" / "aggregates"


def check_plan(
    plan: UpgradePlan,
    old: int,
    old_events: Sequence[oracle.Event],
    events: Sequence[oracle.Event],
    old_ends: dict[int, int],
    watermark: int,
) -> list[str]:
    """The plan against the events as produced: what it says must follow from them alone."""
    wrong = []
    if (plan.from_generation, plan.to_generation) != (old, old + 1):
        wrong.append(f"moves generations {plan.from_generation}->{plan.to_generation}")
    if plan.watermark_ms != watermark:
        wrong.append(f"W = {plan.watermark_ms}, expected {watermark} (newest event - delay)")
    t_min = watermark - watermark % WINDOW_MS  # the start of the window W falls in
    parts = {part.partition: part for part in plan.partitions}
    if sorted(parts) != list(range(PARTITIONS)):
        wrong.append(f"has partitions {sorted(parts)}")
    for number, part in sorted(parts.items()):
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
            feeding = sum(
                1 for e in mine if e.offset >= scan.batch_level_offset and e.time_ms >= t_min
            )
            if (scan.feeding_records, scan.malformed_records) != (feeding, 0):
                wrong.append(f"partition {number}: {scan}, expected {feeding} feeding, 0 malformed")
        arrived = sum(1 for e in events[len(old_events) :] if e.partition == number)
        waits = part.waiting_scan
        if waits is None or (waits.scanned_records, waits.late_records) != (arrived, 0):
            wrong.append(f"partition {number}: {waits}, expected {arrived} scanned, 0 late")
    return wrong


def epoch_ms(moment: datetime) -> int:
    """Delta's timestamps read as UTC; a naive one (a reader without the zone) is UTC too."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return round(aware.timestamp() * 1000)


def tree_names(root: psutil.Process) -> set[str]:
    try:
        members = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return set()
    names = set()
    for member in members:
        with suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            names.add(member.name())
    return names


def tail(driver: driver_process.DriverProcess, count: int = 15) -> str:
    return "".join(driver.lines[-count:])


BENCHMARK = Benchmark(
    "upgrade", "downtime of an upgrade ÷ a plain restart, per connector, and on Delta", run
)
