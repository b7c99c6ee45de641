"""The environment the benchmark harness's tests put in their runs."""

from bench.record import Environment

ENVIRONMENT = Environment(
    cores=2,
    load_1m=0.5,
    memory_gib=23.5,
    python="3.11.7",
    spark="4.2.0",
    kafka="4.4.0",
    backend="apache",
    connectors=("python", "builtin"),
    commit="abc1234",
)
