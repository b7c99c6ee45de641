"""``python -m bench``: run the benchmarks into one table and a results file; draw the history.

Gather (run each benchmark, catching its crash), decide (a run fails on a crash or a wrong
result, never on speed), render (the table; the results file).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from bench import table
from bench.benchmarks import BENCHMARKS
from bench.kit import environment
from bench.kit.context import Benchmark, Connector, Context
from bench.record import BenchRecordError, BenchRun, Mode, Outcome, Status
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade.testing._class_archive import use_class_archive
from pyspark_kafka_upgrade.testing._jvm import use_test_jvm_options
from pyspark_kafka_upgrade.testing._kafka.start import start_kafka_backend

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CONNECTORS: tuple[Connector, ...] = ("python", "builtin")

EPILOG = """examples:
  python -m bench run                       every benchmark at full size (make bench)
  python -m bench run --quick               once each on small data, as CI runs it
  python -m bench run --only planner,scan   some of them
  python -m bench report                    bench/results/history.png from every full run

The broker is chosen as in the tests: KAFKA_BACKEND (auto, testcontainers, apache,
external with KAFKA_BOOTSTRAP_SERVERS). A run exits 1 when a benchmark crashes or one of
its checks of correctness fails; a missed target is reported in the table, never fatal.
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="The library's benchmarks: every figure a ratio measured side by side.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the benchmarks, print the table, keep the results")
    run.add_argument("--quick", action="store_true", help="small data, one round each (CI)")
    run.add_argument("--only", help="comma-separated names (see `list`); default: all")
    run.add_argument(
        "--connectors", default=",".join(CONNECTORS), help="python,builtin (default: both)"
    )
    run.add_argument(
        "--results", type=Path, help="where the results file goes (bench/results; quick: a temp)"
    )
    run.add_argument("--keep", type=Path, help="keep the work directory here (default: a temp)")
    commands.add_parser("list", help="the benchmarks, one line each")
    report = commands.add_parser("report", help="draw every full run's ratios over time")
    report.add_argument("--results", type=Path, default=RESULTS, help="(bench/results)")
    report.add_argument("--out", type=Path, help="the picture (<results>/history.png)")
    args = parser.parse_args(argv)

    if args.command == "list":
        for benchmark in BENCHMARKS:
            print(f"{benchmark.name:<10} {benchmark.summary}")
        return 0
    if args.command == "report":
        return _report(args.results, args.out or args.results / "history.png")
    try:
        chosen = select(args.only)
        connectors = connectors_of(args.connectors)
    except ValueError as error:
        parser.error(str(error))
    mode: Mode = "quick" if args.quick else "full"
    if args.quick:
        # A quick run checks and does not measure: its JVMs start as the tests' do, with C1
        # only (a third less CPU on a CI machine), where a full run keeps the defaults.
        use_test_jvm_options(os.environ)
        # As the plugin does: an archive only where Spark's JVMs start, over Kafka.
        needed = any(benchmark.needs_kafka for benchmark in chosen)
        archive = use_class_archive(
            os.environ, None if needed else "no chosen benchmark needs Kafka"
        )
        print(f"spark class archive: {archive.note}")
    bench_run = run_benchmarks(chosen, mode, connectors, args.keep)
    print(table.render(bench_run))
    results = args.results or (RESULTS if mode == "full" else Path(tempfile.gettempdir()))
    path = write(bench_run, results)
    print(f"results: {path}")
    return 1 if bench_run.failed else 0


def select(only: str | None) -> list[Benchmark]:
    if not only:
        return list(BENCHMARKS)
    names = [name.strip() for name in only.split(",") if name.strip()]
    known = {benchmark.name: benchmark for benchmark in BENCHMARKS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"--only: no benchmark {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[name] for name in names]


def connectors_of(text: str) -> tuple[Connector, ...]:
    chosen: list[Connector] = []
    for name in (part.strip() for part in text.split(",")):
        if name == "python":
            chosen.append("python")
        elif name == "builtin":
            chosen.append("builtin")
        else:
            raise ValueError(f"--connectors: {name!r} is neither python nor builtin")
    return tuple(chosen)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_benchmarks(
    chosen: Sequence[Benchmark], mode: Mode, connectors: tuple[Connector, ...], keep: Path | None
) -> BenchRun:
    # Spark loads only when a benchmark asks for the session: `list` and `report` need none.
    from bench.kit import spark

    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    with broker(chosen) as backend, work_directory(keep) as workdir:
        say(f"bench: broker {backend.description}; work directory {workdir}")
        env = environment.gather(backend.name, backend.description, connectors)
        bootstrap = backend.bootstrap_servers
        delta = any(benchmark.needs_delta for benchmark in chosen)
        context = Context(
            quick=mode == "quick",
            workdir=workdir,
            bootstrap=bootstrap,
            connectors=connectors,
            say=say,
            start_spark=lambda: spark.shared_session(workdir, bootstrap, connectors, delta=delta),
        )
        try:
            outcomes = tuple(run_one(benchmark, context) for benchmark in chosen)
        finally:
            context.stop()
    return BenchRun(started_at=started_at, mode=mode, environment=env, outcomes=outcomes)


@contextmanager
def broker(chosen: Sequence[Benchmark]) -> Iterator[testing.KafkaBackend]:
    """The run's one broker, chosen as the tests choose theirs; none for pure benchmarks."""
    if not any(benchmark.needs_kafka for benchmark in chosen):
        yield testing.KafkaBackend("none", "", "none (no benchmark chosen reads Kafka)")
        return
    with start_kafka_backend(progress=say) as backend:
        yield backend


def run_one(benchmark: Benchmark, context: Context) -> Outcome:
    """One benchmark; its crash is its outcome, and the others still run."""
    say(f"bench: {benchmark.name}: {benchmark.summary}")
    started = time.perf_counter()
    prefixed = _prefixed(benchmark.name)
    context.say = prefixed
    try:
        result = benchmark.run(context)
    except Exception as error:
        traceback.print_exc(file=sys.stderr)
        seconds = time.perf_counter() - started
        say(f"bench: {benchmark.name}: CRASHED after {seconds:.0f} s: {_one_line(error)}")
        return Outcome(benchmark.name, "crashed", seconds, problems=(_one_line(error),))
    finally:
        context.say = say
    seconds = time.perf_counter() - started
    status: Status = "wrong" if result.problems else "ok"
    for problem in result.problems:
        say(f"bench: {benchmark.name}: WRONG: {problem}")
    say(f"bench: {benchmark.name}: {status} in {seconds:.0f} s")
    return Outcome(benchmark.name, status, seconds, result.figures, result.problems, result.sizes)


def _prefixed(name: str) -> Callable[[str], None]:
    return lambda line: say(f"  {name}: {line}")


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


@contextmanager
def work_directory(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        yield Path(tmp)


def write(bench_run: BenchRun, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = bench_run.started_at.replace(":", "").replace("+0000", "Z").replace("+00:00", "Z")
    path = directory / f"{stamp}-{bench_run.mode}.json"
    path.write_text(bench_run.to_json() + "\n", encoding="utf-8")
    return path


def _report(results: Path, out: Path) -> int:
    from bench import history

    try:
        runs = history.load(results)
    except BenchRecordError as error:
        print(f"bench report: {error}", file=sys.stderr)
        return 1
    if not runs:
        print(f"bench report: no full run in {results}; `make bench` makes one", file=sys.stderr)
        return 1
    history.draw(runs, out)
    print(f"history of {len(runs)} runs: {out}")
    return 0
