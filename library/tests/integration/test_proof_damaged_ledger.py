"""A damaged ledger never makes `upgrade plan` plan silently on wrong facts.

The ledger is what the planner knows beyond the checkpoint: each batch's event times, and
the generation's signature. Here it is deleted, truncated (the last batches' records
missing) or holed (records missing in the middle), in whichever store this project chose.
`upgrade plan` must then either fall back to the checkpoint's own ``offsets/`` files and
say so, or refuse and say why. Where it goes on, version 2 must lose nothing and write
nothing twice: the oracle, computed from the events produced, is the judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._oracle as oracle
import support.ledger_damage as damage
import support.pipelines as pipelines
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
    load_settings,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from support.example import main

pytestmark = pytest.mark.integration

MINUTE_MS = pipelines.MINUTE_MS
GRID = oracle.Grid(size_ms=10 * MINUTE_MS)
ARTICLES = ["a1", "a2"]
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
TIMES = [pipelines.BASE_MS + minute * MINUTE_MS for minute in range(60)]


@dataclass
class Stopped:
    """Generation 1 ran over a prefix of the stream and stopped with windows open."""

    version_1: Settings
    version_2: Settings
    options: list[str]  # version 2 as the CLI's --set options
    log: oracle.EventLog
    topic: str
    batches: list[int]  # generation 1's committed batches

    @property
    def checkpoint(self) -> str:
        return GenerationLayout(self.version_1.pipeline.root, 1).checkpoint

    def output(self, generation: int) -> str:
        return GenerationLayout(self.version_1.pipeline.root, generation).output


def run(settings: Settings, spark: SparkSession) -> None:
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)


@pytest.fixture
def stopped(spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path) -> Stopped:
    """Version 1 read 40 events, 10 a batch, and stopped: 10:30-10:40 is still open."""
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("proof-ledger")
    testing.create_topic(bootstrap, topic, 2)
    log = oracle.EventLog(bootstrap)
    log.produce(topic, pipelines.page_views(ARTICLES, TIMES[:40], partitions=2))
    rate = "kafka.max_offsets_per_trigger=10"
    version_1 = pipelines.pipeline_settings(tmp_path, bootstrap, topic, rate)
    run(version_1, spark)
    overrides = pipelines.pipeline_overrides(tmp_path, bootstrap, topic, rate, VERSION_2)
    stopped = Stopped(
        version_1=version_1,
        version_2=load_settings(PROJECT, env={}, overrides=overrides).settings,
        options=[f"--set={option}" for option in overrides],
        log=log,
        topic=topic,
        batches=[],
    )
    stopped.batches = oracle.committed_batches(stopped.checkpoint)
    # Several batches, so that some can go missing at the end and some in the middle.
    assert len(stopped.batches) >= 4, stopped.batches
    return stopped


def upgrade(
    stopped: Stopped, command: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """`upgrade <command>` of version 2, as a user types it: exit code, stdout, stderr."""
    capsys.readouterr()
    code = main([*stopped.options, "upgrade", command])
    out, err = capsys.readouterr()
    return code, out, err


def version_2_is_exact(
    stopped: Stopped, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """Apply the plan, run version 2 over the rest of the stream, and judge with the oracle."""
    code, _, err = upgrade(stopped, "apply", capsys)
    assert code == 0, err
    stopped.log.produce(stopped.topic, pipelines.page_views(ARTICLES, TIMES, partitions=2)[40:])
    run(stopped.version_2, spark)
    root = stopped.version_1.pipeline.root
    expected = oracle.expected_counts(
        stopped.log.events,
        GRID,
        written_through_ms=oracle.final_watermark_ms(GenerationLayout(root, 2).checkpoint),
    )
    written = {f"generation {n}": oracle.written_rows(spark, stopped.output(n)) for n in (1, 2)}
    oracle.Comparison(expected, written, stopped.log.events, GRID).check()


def test_a_deleted_ledger_is_refused_until_generation_1_records_itself_again(
    stopped: Stopped, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    damage.delete_ledger(stopped.version_1.ledger, stopped.version_1.pipeline.name)

    # Without the ledger there is no record of what generation 1 ran (its signature), so
    # there is nothing to compare version 2 with: the plan refuses, and says the checkpoint
    # is there while its ledger is not.
    code, out, err = upgrade(stopped, "plan", capsys)
    assert (code, out) == (2, "")
    why = {
        "sqlite": f"no ledger at {stopped.version_1.ledger.location}, but",
        "filesystem": f"knows no pipeline {stopped.topic!r} (it knows: none), but",
        "postgres": f"knows no pipeline {stopped.topic!r}",
    }[stopped.version_1.ledger.store]
    assert why in err, err
    assert "holds the checkpoint of generation 1, with committed batches" in err, err
    code, _, err = upgrade(stopped, "apply", capsys)
    assert code == 2, err
    assert not Path(GenerationLayout(stopped.version_1.pipeline.root, 2).checkpoints).exists()

    # The way out the refusal names: run generation 1 once more with its own settings. It
    # records itself again and marks the batches the ledger lost as gaps; the plan then
    # takes their offsets from the checkpoint and says so.
    assert "run generation 1 once more with the settings it ran with" in err, err
    run(stopped.version_1, spark)
    code, out, err = upgrade(stopped, "plan", capsys)
    assert code == 0, err
    lost = f"{stopped.batches[0]}-{stopped.batches[-1]}"
    assert f"Note: the ledger has gap markers for batches {lost}." in out, out
    assert "with offsets from the checkpoint's offsets/ files" in out, out
    version_2_is_exact(stopped, spark, capsys)


def test_a_truncated_ledger_falls_back_to_the_checkpoint_and_says_so(
    stopped: Stopped, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    # The last two batches' records are gone, among them the batch that read the open
    # window's events, as when the job died before its listener caught up.
    missing = stopped.batches[-2:]
    damage.delete_batches(stopped.version_1.ledger, stopped.version_1.pipeline.name, 1, missing)

    code, out, err = upgrade(stopped, "plan", capsys)
    assert code == 0, err
    assert (
        f"Note: the ledger is behind the checkpoint: it ends at batch {missing[0] - 1}, the "
        f"checkpoint's last commit is {missing[-1]} (batches {missing[0]}-{missing[-1]} not "
        "recorded)."
    ) in out, out
    assert "(checkpoint offsets/" in out, out  # the restart's offsets: from the checkpoint
    version_2_is_exact(stopped, spark, capsys)


def test_a_gap_in_the_ledger_falls_back_to_the_checkpoint_and_says_so(
    stopped: Stopped, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every record but the first and the last batch's is gone: the ledger still ends where
    # the checkpoint does, so only its middle tells.
    missing = stopped.batches[1:-1]
    damage.delete_batches(stopped.version_1.ledger, stopped.version_1.pipeline.name, 1, missing)

    code, out, err = upgrade(stopped, "plan", capsys)
    assert code == 0, err
    assert f"Note: batches {missing[0]}-{missing[-1]} are missing from the ledger." in out, out
    assert "(checkpoint offsets/" in out, out
    version_2_is_exact(stopped, spark, capsys)
