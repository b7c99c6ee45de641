"""How the planner's time grows with the ledger: 1k, 10k and 100k batches.

What `upgrade plan` does short of reading Kafka: parse the ledger's offsets texts into
facts, then ``plan_restart``. Linear growth keeps t(100k) / t(10k) near 10; the figure
divides that by 10. The second figure sets t(100k) against its budget of one second.
Every plan is checked against answers computed from the synthetic stream itself.
"""

from __future__ import annotations

from bench.kit import synthetic
from bench.kit.context import Benchmark, Context, Result
from bench.kit.timing import timed
from bench.record import Figure, Series, Target
from pyspark_kafka_upgrade._core.planner.tightening import tighten
from pyspark_kafka_upgrade._domain.records.restart import RestartPlan
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

SIZES = (1_000, 10_000, 100_000)
BUDGET_S = 1.0
WINDOW = WindowSpec(duration_ms=600_000, slide_ms=600_000, watermark_delay_ms=120_000)


def run(ctx: Context) -> Result:
    repeats = ctx.size(1, 5)
    stream = synthetic.stream_for(WINDOW, partitions=4, scan_records=20_000, batch_ms=1_000)
    seconds: dict[int, list[float]] = {size: [] for size in SIZES}
    problems: list[str] = []
    for size in SIZES:
        history = synthetic.build_history(stream, WINDOW, size)
        want = synthetic.expected_of(history)

        # One untimed warm-up, then the repeats.
        def plan_it(history: synthetic.History = history) -> RestartPlan:
            return synthetic.plan_of(history, synthetic.facts_of(history))

        for number in range(repeats + 1):
            elapsed, plan = timed(plan_it)
            if number:
                seconds[size].append(elapsed)
        tightened = tighten(plan, synthetic.scan_of(stream))
        wrong = synthetic.check(plan, tightened, history, want)
        problems += [f"{size:,} batches: {problem}" for problem in wrong]
        ctx.say(f"{size:,} batches: {min(seconds[size]) * 1000:.1f} ms (best of {repeats})")
    small, large = SIZES[-2], SIZES[-1]
    absolute = {f"{size:,} batches": Series(tuple(seconds[size]), "s") for size in SIZES}
    growth = Series(
        tuple(b / a / (large / small) for a, b in zip(seconds[small], seconds[large], strict=True))
    )
    figures = (
        Figure(
            "planner.growth",
            f"plan time, {large:,} ÷ {small:,} batches, ÷ {large // small} (1 = linear)",
            growth,
            Target("<=", 1.5),
            absolute,
        ),
        Figure(
            "planner.budget",
            f"plan time at {large:,} batches ÷ {BUDGET_S:g} s",
            Series(tuple(s / BUDGET_S for s in seconds[large])),
            Target("<", 1.0),
            {f"{large:,} batches": absolute[f"{large:,} batches"]},
        ),
    )
    return Result(figures, tuple(problems), {"largest ledger": large, "repeats": repeats})


BENCHMARK = Benchmark(
    "planner", "plan time over 1k, 10k, 100k ledger batches (no Kafka)", run, needs_kafka=False
)
