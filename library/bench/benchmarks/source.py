"""Records per second of the windowed job: the pykafka source ÷ Spark's built-in connector.

One topic of valid page views, one Spark session built for the built-in connector (the
pykafka source needs no jars, so it reads in the same session), and the pipeline's
aggregates query (parse, observe, valid events, watermark, windows, append file sink) run
with each connector over the whole topic: Trigger.AvailableNow, a fresh checkpoint per run,
the order alternating round by round. The rate is records ÷ the query's wall time, start
and stop included. Checked: each run read every record, found none malformed, and both
connectors wrote the same windows.
"""

from __future__ import annotations

from bench.kit import spark, topics
from bench.kit.context import Benchmark, Connector, Context, Result
from bench.kit.timing import ratios, side_by_side
from bench.record import Figure, Series, Target
from pyspark_kafka_upgrade._core.query import columns
from support import pipelines

ARTICLES = [f"a{n}" for n in range(1, 21)]
LABELS: dict[Connector, str] = {"python": "pykafka", "builtin": "builtin"}
TIMEOUT_S = 900


def run(ctx: Context) -> Result:
    if set(ctx.connectors) != set(LABELS):
        ctx.say("needs both connectors: nothing to compare")
        return Result((), ("the source figure needs --connectors python,builtin",))
    records, partitions = ctx.size(20_000, 300_000), 2
    topic = topics.page_view_topic(
        ctx.bootstrap, "bench-source", records, partitions, ARTICLES, ctx.say
    )
    base = pipelines.pipeline_settings(ctx.workdir / topic, ctx.bootstrap, topic)
    problems: list[str] = []
    outputs: dict[Connector, list[list[tuple[object, ...]]]] = {"python": [], "builtin": []}
    counter = iter(range(1_000_000))

    def side(connector: Connector) -> float:
        name = f"{LABELS[connector]}_{next(counter)}"
        job = spark.run_windowed_job(
            ctx.spark,
            spark.with_connector(base, connector),
            ctx.workdir / topic,
            name,
            observed=True,
            timeout_s=TIMEOUT_S,
        )
        if job.input_rows != records:
            problems.append(f"{name} read {job.input_rows:,} records, expected {records:,}")
        malformed = job.observed(columns.MALFORMED_ROWS)
        if malformed:
            problems.append(f"{name} found {malformed} malformed records; all are valid")
        frame = ctx.spark.read.format(base.sink.format).load(str(job.output))
        outputs[connector].append([tuple(row) for row in frame.sort(*frame.columns).collect()])
        ctx.say(f"{name}: {job.wall_s:.1f} s, {records / job.wall_s:,.0f} records/s")
        return records / job.wall_s

    rates = side_by_side(
        {"python": lambda: side("python"), "builtin": lambda: side("builtin")},
        ctx.size(1, 3),
        warmup=ctx.size(0, 1),
        say=ctx.say,
    )
    for ours, theirs in zip(outputs["python"], outputs["builtin"], strict=True):
        if ours != theirs:
            problems.append(
                f"the connectors wrote different windows ({len(ours)}, {len(theirs)} rows)"
            )
    if not outputs["python"][0]:
        problems.append("no window was written: the topic spans too little event time")
    figure = Figure(
        "source.pykafka_over_builtin",
        "windowed job records/s, pykafka ÷ built-in connector",
        ratios(rates["python"], rates["builtin"]),
        Target(">=", 1.0),
        {LABELS[c]: Series(tuple(rates[c]), "records/s") for c in LABELS},
    )
    return Result((figure,), tuple(problems), {"records": records, "partitions": partitions})


BENCHMARK = Benchmark("source", "windowed job records/s, pykafka ÷ built-in connector", run)
