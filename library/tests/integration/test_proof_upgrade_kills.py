"""An upgrade killed with SIGKILL at any point reaches the exact result when run again.

`upgrade apply` writes nothing it cannot write again and deletes nothing, so a kill after
any of its steps leaves a state from which running it again finishes the job. The new
generation's first batch is the replay; a kill just before or just after its commit must
neither lose the open windows nor write a window twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._driver_process as driver_process
import pyspark_kafka_upgrade.testing._oracle as oracle
import pyspark_kafka_upgrade.testing._waiting as waiting
import support.pipelines as pipelines
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.ledger.opening import (
    open_store,
)
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._application.upgrade.commands import (
    APPLY_STEPS,
    apply_command,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.plan import (
    UpgradePlan,
)
from pyspark_kafka_upgrade._domain.records.record_errors import (
    PlanAlreadyAppliedError,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._proof import verify_says

pytestmark = pytest.mark.integration

ARTICLES = ["a1", "a2"]
GRID = oracle.Grid(size_ms=10 * pipelines.MINUTE_MS)
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
TIMEOUT_S = 240
SIGKILL_EXIT = -9


@dataclass(frozen=True)
class Upgrade:
    """Generation 1 ran over the first 40 of 60 events, one a minute; 10:30-10:40 is open."""

    log: oracle.EventLog
    topic: str
    root: Path
    version_1: Settings
    version_2: list[str]  # its settings, as `--set` overrides
    rest: list[testing.Record]  # the 20 events produced once version 2 is about to run

    @property
    def settings_2(self) -> Settings:
        return load_settings(PROJECT, env={}, overrides=self.version_2).settings

    def generation(self, number: int) -> GenerationLayout:
        return GenerationLayout(str(self.root), number)

    def check_exact(self, spark: SparkSession, *, verify: bool = False) -> None:
        """Generations 1 and 2 together wrote each window once, with every event counted;
        with ``verify``, `verify` must say the same from what the kills left."""
        # Each generation wrote every window ending at or before its own last W. Generation
        # 2's may be below generation 1's: a run restarted after the replay's commit, with
        # nothing new to read, runs no batch, and the due windows wait in its state.
        written_through = max(
            oracle.final_watermark_ms(self.generation(n).checkpoint) for n in (1, 2)
        )
        comparison = oracle.Comparison(
            oracle.expected_counts(self.log.events, GRID, written_through_ms=written_through),
            {
                f"generation {n}": oracle.written_rows(spark, self.generation(n).output)
                for n in (1, 2)
            },
            self.log.events,
            GRID,
        )
        if verify:
            verify_says(
                comparison.exact,
                comparison.report(),
                self.settings_2,
                spark,
                from_ms=min(event.time_ms for event in self.log.events) - GRID.size_ms,
            )
        comparison.check()


@pytest.fixture
def upgrade(spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path) -> Upgrade:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("upgrade-kill")
    testing.create_topic(bootstrap, topic, 2)
    times = [pipelines.BASE_MS + i * pipelines.MINUTE_MS for i in range(60)]
    records = pipelines.page_views(ARTICLES, times, partitions=2)
    log = oracle.EventLog(bootstrap)
    log.produce(topic, records[:40])
    overrides = pipelines.pipeline_overrides(
        tmp_path,
        bootstrap,
        topic,
        "kafka.max_offsets_per_trigger=10",
        "pipeline.state_partitions=1",  # one core: eight state partitions only cost time
    )
    version_1 = load_settings(PROJECT, env={}, overrides=overrides).settings
    run_pipeline(RunRequest(settings=version_1, available_now=True, echo=lambda _: None), spark)
    return Upgrade(
        log, topic, tmp_path / "pipeline", version_1, [*overrides, VERSION_2], records[40:]
    )


def as_options(overrides: list[str]) -> list[str]:
    return [f"--set={override}" for override in overrides]


def finish(upgrade: Upgrade, spark: SparkSession) -> None:
    """The rest of the stream arrives and generation 2 runs until it has read it all."""
    run_pipeline(
        RunRequest(settings=upgrade.settings_2, available_now=True, echo=lambda _: None), spark
    )


@pytest.mark.parametrize("step", APPLY_STEPS)
def test_apply_killed_after_a_step_finishes_exactly_when_run_again(
    spark: SparkSession, upgrade: Upgrade, tmp_path: Path, step: str
) -> None:
    killed = driver_process.DriverProcess(
        [step, *as_options(upgrade.version_2), "upgrade", "apply"],
        tmp_path,
        module="support.kill_after_step",
    )
    assert killed.wait(TIMEOUT_S) == SIGKILL_EXIT, killed.output
    assert f"killed after {step}" in killed.output

    if step == APPLY_STEPS[-1]:
        # The plan was applied in full before the kill: applying again would start a third
        # generation from a plan nobody ran, so it is refused.
        with pytest.raises(PlanAlreadyAppliedError):
            apply_command(upgrade.settings_2, accept_data_loss=False, spark=lambda: spark)
    else:
        apply_command(upgrade.settings_2, accept_data_loss=False, spark=lambda: spark)
    upgrade.log.produce(upgrade.topic, upgrade.rest)
    finish(upgrade, spark)
    upgrade.check_exact(spark)


@pytest.mark.parametrize("moment", ["before", "after"])
def test_the_new_generation_killed_around_its_first_commit_finishes_exactly(
    spark: SparkSession, upgrade: Upgrade, tmp_path: Path, moment: str
) -> None:
    apply_command(upgrade.settings_2, accept_data_loss=False, spark=lambda: spark)
    upgrade.log.produce(upgrade.topic, upgrade.rest)
    checkpoint = Path(upgrade.generation(2).checkpoint)
    run = [*as_options(upgrade.version_2), "run", "--master=local[1]"]
    with driver_process.started(run, tmp_path) as driver:
        waiting.wait_until(
            lambda: oracle.planned_batches(checkpoint) or not driver.running,
            timeout=TIMEOUT_S,
            interval=0.01,
            message="generation 2 never planned its first batch",
        )
        assert driver.running, driver.output
        if moment == "before":
            driver.freeze()  # the JVM too: the replay batch stays uncommitted
        else:
            # Killed as soon as the replay commits: the run polls once a second to mark its
            # plan consumed, so most kills land before it has; either way must end exact.
            waiting.wait_until(
                lambda: oracle.committed_batches(checkpoint) or not driver.running,
                timeout=TIMEOUT_S,
                interval=0.01,
                message="the replay batch never committed",
            )
            assert driver.running, driver.output
        driver.kill()
    committed = oracle.committed_batches(checkpoint)
    assert committed[:1] == ([] if moment == "before" else [0]), committed

    finish(upgrade, spark)
    # The replay batch killed in flight or just after its commit: the ledger and the
    # checkpoint disagree most here, so verify must read them right.
    upgrade.check_exact(spark, verify=True)
    with open_store(upgrade.version_1.ledger, spark=lambda: spark) as store:
        record = store.generation(upgrade.version_1.pipeline.name, 2)
    assert record is not None and record.plan is not None
    assert UpgradePlan.from_json(record.plan).consumed_at_ms is not None, (
        "the restarted run never marked its plan"
    )
