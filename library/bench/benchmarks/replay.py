"""How much an upgrade replays: records replayed ÷ records that truly feed open windows.

Over several window specs and stop points of a synthetic old generation (no Kafka), the
planner's restart point after tightening; beside it, what a batch-level restart and a
replay from the earliest offset would read. The records that truly feed an open window
are counted from the stream itself, independently of the planner.
"""

from __future__ import annotations

from bench.kit import synthetic
from bench.kit.context import Benchmark, Context, Result
from bench.record import Figure, Series, Target
from pyspark_kafka_upgrade._core.planner.tightening import tighten
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

MINUTE = 60_000
SPECS = {
    "10 min tumbling, delay 2 min": WindowSpec(10 * MINUTE, 10 * MINUTE, 2 * MINUTE),
    "10 min sliding by 5, delay 1 min": WindowSpec(10 * MINUTE, 5 * MINUTE, 1 * MINUTE),
    "1 h tumbling, delay 10 min": WindowSpec(60 * MINUTE, 60 * MINUTE, 10 * MINUTE),
}


def run(ctx: Context) -> Result:
    stops = ctx.size((2_000, 7_777), (2_000, 7_777, 20_011, 50_021))
    tightened: list[float] = []
    batch_level: list[float] = []
    earliest: list[float] = []
    problems: list[str] = []
    for name, window in SPECS.items():
        stream = synthetic.stream_for(window, partitions=3, scan_records=30_000, batch_ms=1_000)
        for batches in stops:
            history = synthetic.build_history(stream, window, batches)
            want = synthetic.expected_of(history)
            plan = synthetic.plan_of(history, synthetic.facts_of(history))
            tight = tighten(plan, synthetic.scan_of(stream))
            where = f"{name}, stopped after {batches:,} batches"
            problems += [f"{where}: {p}" for p in synthetic.check(plan, tight, history, want)]
            feeding = want.feeding_per_partition * stream.partitions
            if tight.records_to_replay is None or plan.records_to_replay is None:
                problems.append(f"{where}: the plan does not count the records it replays")
                continue
            tightened.append(tight.records_to_replay / feeding)
            batch_level.append(plan.records_to_replay / feeding)
            earliest.append(stream.offset(batches) * stream.partitions / feeding)
            ctx.say(f"{where}: {tightened[-1]:.4f} (batch level {batch_level[-1]:.4f})")
    figure = Figure(
        "replay.amplification",
        "records replayed ÷ records feeding open windows",
        Series(tuple(tightened)),
        Target("<=", 1.05),
        {
            "batch level": Series(tuple(batch_level), "x"),
            "from earliest": Series(tuple(earliest), "x"),
        },
    )
    return Result((figure,), tuple(problems), {"specs": len(SPECS), "stop points": len(stops)})


BENCHMARK = Benchmark(
    "replay", "replay amplification over window specs and stop points", run, needs_kafka=False
)
