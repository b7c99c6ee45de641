"""`run` killed with SIGKILL at random moments, restarted on the same checkpoint each time,
ends with exactly the output an uninterrupted run writes, and a ledger that tells the truth.

Each trial is seeded. It kills the running job once at a moment drawn from three (between
batches, in the middle of a batch, or after a commit but before the listener has written
the ledger), then once more during the first batch after the restart. It then makes an
upgrade plan, as an operator would after a crash, checks it against the oracle, and lets the
job finish. A run of the suite makes ``SOAK_TRIALS`` = 3 trials on the connector under test
(``KAFKA_CONNECTOR``); ``make soak`` runs 20 per connector and prints the table of every
trial (``support.soak_table``).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._driver_process as driver_process
import pyspark_kafka_upgrade.testing._oracle as oracle
import pyspark_kafka_upgrade.testing._waiting as waiting
import support.pipelines as pipelines
import support.plans as plans
import support.soak_table as soak_table
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.ledger.opening import (
    open_store,
)
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._application.upgrade.commands import (
    plan_command,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._proof import verify_says

pytestmark = pytest.mark.integration

TRIALS = int(os.environ.get("SOAK_TRIALS", "3"))
FIRST_SEED = int(os.environ.get("SOAK_SEED", "20261125"))
ARTICLES = ["a1", "a2", "a3"]
EVENTS = 120  # one a minute; at 12 a batch, 10 batches
PER_BATCH = 12
GRID = oracle.Grid(size_ms=10 * pipelines.MINUTE_MS)
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
KILL_TIMEOUT_S = 180
POLL_S = 0.01  # a batch lasts a fraction of a second: look often
ATTEMPTS = 5  # commits to try pausing the driver after, before its listener writes

# The moments the first kill aims at. The second always lands in the first batch after
# the restart. CI's three trials take one each, in turn; a soak cycles through them.
MOMENTS = ("between batches", "mid-batch", "after a commit, before the ledger")


@dataclass(frozen=True)
class Trial:
    number: int
    seed: int
    moment: str
    kill_at_batch: int  # the first kill waits for this batch


def trials() -> list[Trial]:
    chosen = []
    for number in range(TRIALS):
        seed = FIRST_SEED + number
        rng = random.Random(seed)
        chosen.append(Trial(number, seed, MOMENTS[number % len(MOMENTS)], rng.randint(1, 4)))
    return chosen


def events_in_order_within_the_delay(seed: int) -> list[int]:
    """One event a minute, each up to a minute early: disorder far below the 5-minute
    delay, so no event is ever late and the oracle needs no batch boundaries."""
    rng = random.Random(seed)
    return [
        pipelines.BASE_MS + i * pipelines.MINUTE_MS - rng.randint(0, 59_000) for i in range(EVENTS)
    ]


def files_under(*directories: Path) -> set[str]:
    return {str(path) for directory in directories for path in directory.rglob("*")}


def state(checkpoint: Path) -> tuple[int, int]:
    """(highest batch planned, highest batch committed); -1 for none."""
    planned = oracle.planned_batches(checkpoint)
    committed = oracle.committed_batches(checkpoint)
    return (planned[-1] if planned else -1, committed[-1] if committed else -1)


def idle_after(checkpoint: Path, batch: int) -> bool:
    planned, committed = state(checkpoint)
    return planned == committed >= batch


def in_flight_after(checkpoint: Path, batch: int) -> bool:
    planned, committed = state(checkpoint)
    return planned > committed and planned > batch


def kill_when(
    driver: driver_process.DriverProcess, condition: Callable[[], bool], what: str
) -> None:
    waiting.wait_until(
        lambda: condition() or not driver.running,
        timeout=KILL_TIMEOUT_S,
        interval=POLL_S,
        message=f"the moment to kill ({what}) never came",
    )
    assert driver.running, f"the run ended before {what}:\n{driver.output}"
    driver.kill()


def kill_between_commit_and_ledger(
    driver: driver_process.DriverProcess,
    checkpoint: Path,
    settings: Settings,
    spark: SparkSession,
    batch: int,
) -> None:
    """Stop the driver's Python the moment a commit appears, and kill it if the listener had
    not yet written that batch to the ledger; if it had, let it go on and try the next."""

    def committed_after(seen: int) -> Callable[[], bool]:
        return lambda: state(checkpoint)[1] > seen or not driver.running

    seen = batch - 1
    for _ in range(ATTEMPTS):
        waiting.wait_until(
            committed_after(seen),
            timeout=KILL_TIMEOUT_S,
            interval=POLL_S,
            message=f"no commit after batch {seen}",
        )
        assert driver.running, f"the run ended before a commit after {seen}:\n{driver.output}"
        driver.pause()
        seen = state(checkpoint)[1]
        batches, _ = recorded(settings, spark)
        if max(batches, default=-1) < seen:
            driver.kill()
            return
        driver.resume()
    raise AssertionError(f"the ledger recorded each of {ATTEMPTS} commits before a pause")


def recorded(settings: Settings, spark: SparkSession) -> tuple[dict[int, BatchRecord], set[int]]:
    """The ledger's batches of generation 1 by id, and the ids it has gap markers for."""
    with open_store(settings.ledger, spark=lambda: spark) as store:
        batches = {batch.batch_id: batch for batch in store.batches(settings.pipeline.name, 1)}
        gaps = {
            gap.batch_id
            for gap in store.gaps(settings.pipeline.name, 1)
            if gap.batch_id is not None
        }
    return batches, gaps


def observed(checkpoint: Path, settings: Settings, spark: SparkSession) -> str:
    """Where the kill landed, from what it left: the checkpoint and the ledger."""
    planned, committed = state(checkpoint)
    batches, _ = recorded(settings, spark)
    facts = [f"commit {committed}" if committed >= 0 else "no commit"]
    if planned > committed:
        facts.append(f"batch {planned} in flight")
    top = max(batches, default=-1)
    if top < committed:
        facts.append(f"ledger at {top}" if top >= 0 else "ledger empty")
    return ", ".join(facts)


@pytest.mark.parametrize("trial", trials(), ids=lambda t: f"trial{t.number}-seed{t.seed}")
def test_kill_9_at_random_moments_loses_and_repeats_nothing(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path, trial: Trial
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("kill-trial")
    testing.create_topic(bootstrap, topic, 2)
    log = oracle.EventLog(bootstrap)
    log.produce(
        topic,
        pipelines.page_views(ARTICLES, events_in_order_within_the_delay(trial.seed), 2),
    )
    overrides = pipelines.pipeline_overrides(
        tmp_path,
        bootstrap,
        topic,
        f"kafka.max_offsets_per_trigger={PER_BATCH}",
        "pipeline.state_partitions=1",  # one core: eight state partitions only cost time
    )
    settings = load_settings(PROJECT, env={}, overrides=overrides).settings
    layout = GenerationLayout(str(tmp_path / "pipeline"), 1)
    checkpoint, output = Path(layout.checkpoint), Path(layout.output)
    run = [*(f"--set={override}" for override in overrides), "run", "--master=local[1]"]

    # 1. Kill the running job at the trial's moment, once batch `kill_at_batch` is reached.
    with driver_process.started(run, tmp_path) as driver:
        at = trial.kill_at_batch
        if trial.moment == "between batches":
            kill_when(driver, lambda: idle_after(checkpoint, at), f"idle after batch {at}")
        elif trial.moment == "mid-batch":
            kill_when(driver, lambda: in_flight_after(checkpoint, at), f"a batch after {at} runs")
        else:
            kill_between_commit_and_ledger(driver, checkpoint, settings, spark, at)
    first = f"{trial.moment} → {observed(checkpoint, settings, spark)}"

    # 2. Restart, and kill again as soon as the first batch after the restart leaves a trace.
    with driver_process.started(run, tmp_path) as driver:
        waiting.wait_until(
            lambda: "running generation 1" in driver.output or not driver.running,
            timeout=KILL_TIMEOUT_S,
            message="the restarted run never started its queries",
        )
        before = files_under(checkpoint, output)
        kill_when(driver, lambda: files_under(checkpoint, output) != before, "the first batch")
    second = f"first batch after restart → {observed(checkpoint, settings, spark)}"
    if "gap markers written" in driver.output:
        second += " (gap markers written)"

    # 3. A plan made now, on whatever the kills left, restarts each partition exactly at the
    #    first event that can still reach an unwritten window.
    version_2 = load_settings(PROJECT, env={}, overrides=[*overrides, VERSION_2]).settings
    plan = plans.planned(
        plan_command(version_2, as_json=True, accept_data_loss=False, spark=lambda: spark)
    )
    w = oracle.final_watermark_ms(checkpoint)
    end = oracle.end_offsets(checkpoint, oracle.committed_batches(checkpoint)[-1])[topic]
    needed = {
        str(partition): min(
            [
                event.offset
                for event in log.events
                if event.partition == partition
                and event.offset < end_offset
                and GRID.last_end(event.time_ms) > w
            ],
            default=end_offset,
        )
        for partition, end_offset in end.items()
    }
    planned = plans.restart_offsets(plan, topic)
    plan_verdict = "exact" if planned == needed and plan.watermark_ms == w else "WRONG"
    row_plan = f"W {oracle.clock(w)}, {plan_verdict}"

    # 4. Let the job finish what is in Kafka, on the same checkpoint.
    lines: list[str] = []
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lines.append), spark)

    final_w = oracle.final_watermark_ms(checkpoint)
    comparison = oracle.Comparison(
        oracle.expected_counts(log.events, GRID, written_through_ms=final_w),
        {"generation 1": oracle.written_rows(spark, output)},
        log.events,
        GRID,
    )
    batches, gaps = recorded(settings, spark)
    committed = oracle.committed_batches(checkpoint)
    untrue = []
    for batch_id in committed:
        record = batches.get(batch_id)
        if record is None:
            if batch_id not in gaps:
                untrue.append(f"batch {batch_id} committed, neither recorded nor marked")
            continue
        in_checkpoint = {
            t: {str(p): o for p, o in parts.items()}
            for t, parts in oracle.end_offsets(checkpoint, batch_id).items()
        }
        if json.loads(record.end_offsets) != in_checkpoint or (
            record.batch_watermark_ms != oracle.batch_watermark_ms(checkpoint, batch_id)
        ):
            untrue.append(f"batch {batch_id}: the ledger's offsets or W differ from offsets/")
    untrue += [f"batch {b} recorded but never committed" for b in set(batches) - set(committed)]

    verdict = "exact" if comparison.exact and not untrue and plan_verdict == "exact" else "FAILED"
    soak_table.ROWS.append(
        soak_table.TrialRow(
            trial=trial.number,
            seed=trial.seed,
            connector=testing.connector_under_test(PROJECT),
            first_kill=first,
            second_kill=second,
            committed=len(committed),
            gap_markers=len(gaps),
            plan=row_plan,
            verdict=verdict,
        )
    )
    # verify, from the ledger and the checkpoint the kills left, must agree with the oracle.
    verify_says(
        comparison.exact,
        comparison.report(),
        settings,
        spark,
        from_ms=min(event.time_ms for event in log.events) - GRID.size_ms,
    )
    comparison.check()
    assert not untrue, "the ledger does not tell the checkpoint's truth:\n" + "\n".join(untrue)
    assert plan.watermark_ms == w, (plan.watermark_ms, w)
    assert planned == needed, (
        f"the plan made after the kills restarts at {planned}; the first offsets that can "
        f"reach a window ending after W = {oracle.clock(w)} are {needed}"
    )
