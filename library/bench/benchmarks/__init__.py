"""Every benchmark, in the order a run takes them: the pure ones first, the slowest last."""

from bench.benchmarks import (
    backfill,
    listener,
    planner,
    replay,
    scan,
    sink,
    source,
    upgrade,
    verify,
)
from bench.kit.context import Benchmark

BENCHMARKS: tuple[Benchmark, ...] = (
    planner.BENCHMARK,
    replay.BENCHMARK,
    source.BENCHMARK,
    listener.BENCHMARK,
    sink.BENCHMARK,
    scan.BENCHMARK,
    verify.BENCHMARK,
    backfill.BENCHMARK,
    upgrade.BENCHMARK,
)
