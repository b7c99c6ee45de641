"""The library passes its own suites, as its CI would run them: lint, unit and integration on
the newest Spark it supports on Apache Kafka as a local process, and its proofs again on the
oldest Spark on a Kafka container (Testcontainers), with Spark's built-in connector (the
default project's own suite runs the pip-only one), nothing skipped. Its benchmarks run once
on small data, so that none can rot unseen.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import TEMPLATE_DIR, check_container_header, check_suite_run, run_tool

LIBRARY = TEMPLATE_DIR / "library"
CONNECTOR = "builtin"
# Every test's outcome, one line each; the slowest tests' wall times.
REPORT = "-rfEsxXp --durations=8"
ENV = {"KAFKA_BACKEND": "apache", "KAFKA_CONNECTOR": CONNECTOR, "PYTEST_ADDOPTS": REPORT}
# Integration tests in pytest runs of their own, so that the two workers end closer
# together: the secured broker's (they start their own broker, so moving them costs that run
# only its Spark session), in this worker since the cluster tests left the Delta project on
# the oldest Spark, and the Delta table's, in the other.
BESIDE = "tests/integration/test_secured_kafka.py"
DELTA = "tests/integration/test_delta_sink.py"
SECURED = (
    f"{BESIDE}::test_the_pipeline_and_its_upgrade_run_on_sasl_ssl_and_no_password_is_left_anywhere",
    f"{BESIDE}::test_every_wrong_login_is_refused_in_one_line_within_seconds",
)
DELTA_PROOFS = (
    f"{DELTA}::test_an_upgrade_into_one_delta_table_is_exact_and_reads_back_outside_spark",
    f"{DELTA}::test_a_replay_without_the_filter_writes_windows_twice_in_the_table",
    f"{DELTA}::test_a_kill_9_between_the_table_commit_and_the_checkpoint_commit_appends_no_batch",
)
# CI's 30 minutes hold each proof once per sink, Spark end and connector where it matters,
# not every combination. On the newest Spark, the proofs below run on the Delta table
# (SINK_FORMAT=delta, in the other worker) instead of on the file sink: the kill trial at
# the moment after a commit, before the ledger's write; the partitions added with the
# python connector (the builtin one's stay on the file sink); the new generation killed
# after its first commit; the naive restart, which on the table runs Delta's own streaming
# sink (on the file sink it runs on the oldest Spark). The kill trial in mid-batch runs on
# the oldest Spark, the one between batches on the newest.
KILL_TRIALS = "tests/integration/test_proof_kill_trials.py::test_kill_9_at_random_moments"
TRIAL = f"{KILL_TRIALS}_loses_and_repeats_nothing"
TOPOLOGY = "tests/integration/test_proof_topology.py::test_partitions_added"
NEGATIVE = "tests/integration/test_proof_negative_controls.py"
MOVED_TO_THE_TABLE = (
    f"{TRIAL}[trial2-seed20261127]",
    f"{TOPOLOGY}_before_the_upgrade_are_read_from_earliest_and_verify_agrees[python]",
    f"{TOPOLOGY}_while_generation_2_runs_and_verify_agrees[python]",
    "tests/integration/test_proof_upgrade_kills.py::"
    "test_the_new_generation_killed_around_its_first_commit_finishes_exactly[after]",
    f"{NEGATIVE}::test_a_naive_restart_from_the_last_end_offsets_loses_the_windows_open_at_the_stop",
)
MOVED_TO_THE_OLDEST = (f"{TRIAL}[trial1-seed20261126]",)
# Left to `SINK_FORMAT=delta make integration` (it skips on files): the restart from
# earliest on Delta's own streaming sink, which writes every window again (its transactions
# are keyed by the query id). In CI, the replay without the filter writes windows twice in
# the table (test_delta_sink.py) and the naive restart above loses them there.
TABLE_ONLY = (
    f"{NEGATIVE}::test_a_restart_from_earliest_on_delta_streaming_sink_writes_every_window_again",
)
PARITY = (
    "tests/integration/test_builtin_connector.py::test_both_connectors_read_identical_dataframes"
)
KILLS = "tests/integration/test_proof_kill_trials.py::test_kill_9_at_random_moments"
PROOF = "tests/integration/test_proof_harness.py::test_the_proof_catches_a_query_whose_replay"
BACKFILL = "tests/integration/test_backfill.py::test_a_backfill_"
# The proofs run again on the oldest Spark: the upgrade, a kill trial (mid-batch) and the
# negative controls, the new generation killed around its first commit, the plugin's proof
# catching a query without its replay filter, and the parser mirror against that Spark's
# own parser. Delta 4.0, built for Spark 4.0, is proven there by a Delta project's whole
# `make test` (tests/test_generated_checks.py), its upgrade's proof and its cluster test.
# Kills of `upgrade apply` between its steps are left to the newest Spark's run: apply runs
# no query, so they are the same on any Spark.
OLDEST_PROOFS = (
    "tests/integration/test_upgrade.py",
    f"{TRIAL}[trial1-seed20261126]",
    "tests/integration/test_proof_negative_controls.py",
    "tests/integration/test_proof_upgrade_kills.py::"
    "test_the_new_generation_killed_around_its_first_commit_finishes_exactly",
    f"{PROOF}_filter_does_nothing",
    "tests/unit/test_event_parser.py",
)


# The longest test here: `make test` runs it in one pytest-xdist worker with two projects'
# suites (the other answers' and a Delta project's on the oldest Spark), beside one that runs
# the other suites ("other suites"), which take about as long together. Measured in a fresh
# clone's CI (s), on a slow run (2026-11-29): integration 1,716 (the backfill's proofs in it)
# + other answers 566 + Delta on the oldest Spark 466, of which cluster tests 367 since left
# out; against the Delta table's proofs 614 + oldest Spark 614 + lint and unit 610 + default
# project 399 + benchmarks 369 + secured Kafka 86. With the cluster tests left out (a run
# of c58bc6c): 1,969 + 464 + 233 = 2,666 against 3,054, so secured Kafka moved here. A run
# of 529348b, alone on the machine: 1,710 + 502 + 195 + 75 = 2,482 against 2,626, so the
# Delta table's backfill (about 150 s) runs here too.
@pytest.mark.xdist_group("library")
def test_the_library_passes_its_integration_suite(kafka_image: str) -> None:
    # kafka_image: tests/integration/test_container_backend.py starts containers of it.
    # In this environment, which holds the library's tools at its pins and the library
    # itself, editable: one virtualenv with pyspark fewer to build.
    elsewhere = (*MOVED_TO_THE_TABLE, *MOVED_TO_THE_OLDEST, *TABLE_ONLY)
    moved = " ".join(f"--deselect={test}" for test in elsewhere)
    env = {**ENV, "PYTEST_ADDOPTS": f"{REPORT} --ignore={BESIDE} --ignore={DELTA} {moved}"}
    result = run_tool(
        ["make", "integration", f"VENV={sys.prefix}"], cwd=LIBRARY, env=env, timeout=3000
    )
    lines = check_suite_run("[library]", result.stdout, CONNECTOR, (PARITY,))
    for test in (KILLS, PROOF):
        assert any(line.startswith(f"PASSED {test}") for line in lines), f"{test} did not pass"
    # The backfill's seven proofs: metrics added (with its kill -9 after the rows), late
    # events, the negative control, a window change, the repair of a naive restart,
    # retention, and the Delta table (its own pipeline, with a kill -9 inside the Spark
    # write, on the python connector: here, since the Delta table's run is in the longer
    # worker).
    assert sum(line.startswith(f"PASSED {BACKFILL}") for line in lines) == 7, "backfill"
    beside = [line for line in lines if (BESIDE in line or DELTA in line) and "PASSED" in line]
    assert not beside, "ran twice"
    moved_lines = tuple(f"PASSED {test}" for test in elsewhere)
    assert not [line for line in lines if line.startswith(moved_lines)], "ran twice"


@pytest.mark.xdist_group("library")
def test_the_library_passes_its_secured_kafka_tests() -> None:
    # The rest of the integration suite, as `make integration` would run it.
    result = run_tool(
        [str(Path(sys.prefix) / "bin" / "pytest"), "-m", "integration", BESIDE],
        cwd=LIBRARY,
        env=ENV,
        timeout=1500,
    )
    lines = check_suite_run("[library, secured]", result.stdout, CONNECTOR, ())
    passed = [line for line in lines if line.startswith("PASSED ")]
    for test in SECURED:  # each for both connectors
        assert sum(line.startswith(f"PASSED {test}[") for line in passed) == 2, (test, passed)


@pytest.mark.xdist_group("other suites")
def test_the_librarys_proofs_hold_on_the_delta_table() -> None:
    # The table's own tests, and the proofs moved to the table (SINK_FORMAT=delta: the
    # pipeline's settings say sink.format=delta, the oracle reads the table with delta-rs).
    result = run_tool(
        [
            str(Path(sys.prefix) / "bin" / "pytest"),
            "-m",
            "integration",
            DELTA,
            *MOVED_TO_THE_TABLE,
        ],
        cwd=LIBRARY,
        env={**ENV, "SINK_FORMAT": "delta"},
        timeout=1500,
    )
    check_suite_run(
        "[library, delta]",
        result.stdout,
        CONNECTOR,
        (*DELTA_PROOFS, *MOVED_TO_THE_TABLE),
    )


@pytest.mark.xdist_group("other suites")
def test_the_library_passes_its_lint_and_unit_suites() -> None:
    # Beside the integration suite, in the other worker: the two halves take about as long.
    # A deadline, not a speed target: about 550 s alone on a slow day, over 900 s beside a
    # heavy job on the same two cores.
    result = run_tool(
        ["make", "lint", "unit", f"VENV={sys.prefix}"], cwd=LIBRARY, env=ENV, timeout=1800
    )
    check_suite_run("[library]", result.stdout, CONNECTOR, (), broker_expected=False)


@pytest.mark.xdist_group("other suites")
def test_the_librarys_proofs_hold_on_the_oldest_spark_on_a_kafka_container(
    kafka_image: str,
) -> None:
    oldest = ["VENV=.venv-oldest", "CONSTRAINTS=constraints-oldest.txt"]
    run_tool(["make", "install", *oldest], cwd=LIBRARY, timeout=1200)
    pins = dict(
        line.split("==", 1)
        for line in (LIBRARY / "constraints-oldest.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    pytest = str(Path(".venv-oldest") / "bin" / "pytest")
    # One kill trial here (SOAK_TRIALS=2 names the second, mid-batch): with the newest
    # Spark's two, one per kill moment; `make soak` runs twenty per connector.
    # On the Kafka container: the upgrade's proof and its kill trial on Testcontainers.
    result = run_tool(
        [pytest, *OLDEST_PROOFS, *(f"--deselect={test}" for test in TABLE_ONLY)],
        cwd=LIBRARY,
        env={**ENV, "SOAK_TRIALS": "2", "KAFKA_BACKEND": "testcontainers"},
        timeout=3000,
    )
    label = f"[library, Spark {pins['pyspark']}]"
    lines = check_suite_run(label, result.stdout, CONNECTOR, (PROOF, KILLS))
    check_container_header(lines, kafka_image)
    assert f"Spark {pins['pyspark']}, master local[1])" in result.stdout


# Every benchmark and the figures it must produce: one per connector where it applies.
BENCH_FIGURES = {
    "planner": {"planner.growth", "planner.budget"},
    "replay": {"replay.amplification"},
    "source": {"source.pykafka_over_builtin"},
    "listener": {"listener.sqlite", "listener.filesystem", "listener.postgres"},
    "sink": {"sink.delta_over_parquet"},
    "scan": {"scan.throughput", "scan.throughput.workers2", "scan.memory"},
    "verify": {"verify.throughput.pykafka", "verify.throughput.builtin", "verify.memory"},
    # Quick: the first connector only (bench/benchmarks/backfill.py says why).
    "backfill": {"backfill.throughput.pykafka", "backfill.memory"},
    # Quick: the Delta pipeline only (bench/benchmarks/upgrade.py says why).
    "upgrade": {"upgrade.downtime.delta"},
}


@pytest.mark.xdist_group("other suites")
def test_the_librarys_benchmarks_run_once_on_small_data_and_their_checks_hold(
    tmp_path: Path,
) -> None:
    # make bench-quick exits 1 on a crash or a failed check of correctness (a window written
    # twice, a plan that disagrees with the events), never on speed.
    result = run_tool(
        ["make", "bench-quick", f"VENV={sys.prefix}", f"BENCH_ARGS=--results {tmp_path}"],
        cwd=LIBRARY,
        env={"KAFKA_BACKEND": "apache"},
        timeout=1200,
    )
    print(result.stdout)
    [path] = tmp_path.glob("*-quick.json")
    run = json.loads(path.read_text())
    assert run["environment"]["connectors"] == ["python", "builtin"]
    assert run["environment"]["backend"] == "apache"
    outcomes = {outcome["benchmark"]: outcome for outcome in run["outcomes"]}
    assert {name: outcome["status"] for name, outcome in outcomes.items()} == dict.fromkeys(
        BENCH_FIGURES, "ok"
    )
    figures = {
        name: {figure["key"] for figure in outcome["figures"]} for name, outcome in outcomes.items()
    }
    assert figures == BENCH_FIGURES
