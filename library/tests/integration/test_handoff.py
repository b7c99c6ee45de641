"""A handoff at a window end C: the old generation runs on and writes every window ending at
or before C, then stops by itself; the new one starts beside it, in a process of its own as
a second deployment would, and writes the windows after C. Every window once, by its owner,
with every event counted (the plugin's oracle), and `verify` says so."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._driver_process as driver_process
import pyspark_kafka_upgrade.testing._oracle as oracle
import pyspark_kafka_upgrade.testing._waiting as waiting
import support.background_run as background
import support.pipelines as pipelines
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.ledger.opening import open_store
from pyspark_kafka_upgrade._application.upgrade.commands import apply_command
from pyspark_kafka_upgrade._core.settings import Settings, load_settings
from pyspark_kafka_upgrade._domain.records.handoff import Handoff
from pyspark_kafka_upgrade._domain.records.ledger import GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._proof import verify_says

pytestmark = pytest.mark.integration

ARTICLES = ["a1", "a2"]
MINUTE_MS = pipelines.MINUTE_MS
GRID = oracle.Grid(size_ms=10 * MINUTE_MS)
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
TIMEOUT_S = 240


def at(minutes: int) -> int:
    return pipelines.BASE_MS + minutes * MINUTE_MS


def committed_watermark(layout: GenerationLayout) -> int | None:
    batches = oracle.committed_batches(layout.checkpoint)
    return oracle.batch_watermark_ms(layout.checkpoint, batches[-1]) if batches else None


def handoff_of(settings: Settings, spark: SparkSession) -> Handoff | None:
    with open_store(settings.ledger, spark=lambda: spark) as store:
        record = store.generation(settings.pipeline.name, 2)
    if record is None or record.plan is None:
        return None
    return UpgradePlan.from_json(record.plan).handoff


@dataclass(frozen=True)
class Stream:
    """One event a minute, 10:00 to 11:11, of which version 1 first sees those to 10:39
    (its W then 10:34); the rest is produced once the handoff is applied."""

    log: oracle.EventLog
    topic: str
    rest: list[testing.Record]
    overrides: list[str]  # version 1's settings, as `--set` overrides
    old: GenerationLayout
    new: GenerationLayout

    @property
    def version_1(self) -> Settings:
        return self.settings()

    @property
    def version_2(self) -> Settings:
        return self.settings(VERSION_2)

    def settings(self, *more: str) -> Settings:
        return load_settings(PROJECT, env={}, overrides=[*self.overrides, *more]).settings

    def run(self, *more: str) -> list[str]:
        """The arguments of `run` of version 1, with ``more`` settings (version 2's)."""
        return [*(f"--set={o}" for o in [*self.overrides, *more]), "run", "--master=local[1]"]


@pytest.fixture
def stream(kafka_backend: testing.KafkaBackend, tmp_path: Path) -> Stream:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("handoff")
    testing.create_topic(bootstrap, topic, 2)
    records = pipelines.page_views(ARTICLES, [at(i) for i in range(72)], partitions=2)
    log = oracle.EventLog(bootstrap)
    log.produce(topic, records[:40])
    overrides = pipelines.pipeline_overrides(
        tmp_path, bootstrap, topic, "pipeline.state_partitions=1"
    )
    old, new = (GenerationLayout(str(tmp_path / "pipeline"), n) for n in (1, 2))
    return Stream(log, topic, records[40:], overrides, old, new)


def test_a_handoff_writes_every_window_once_by_its_owner(
    spark: SparkSession, stream: Stream, tmp_path: Path
) -> None:
    log, old, new = stream.log, stream.old, stream.new
    version_1, version_2 = stream.version_1, stream.version_2
    boundary = at(50)

    with background.running(version_1, spark) as old_run:
        waiting.wait_until(
            lambda: (committed_watermark(old) or 0) >= at(34) or old_run.ended,
            timeout=TIMEOUT_S,
            message="generation 1 never reached W = 10:34",
        )
        applied = apply_command(
            version_2, accept_data_loss=False, handoff_at_ms=boundary, spark=lambda: spark
        )
        assert "a handoff at C = 2025-11-22T10:50:00" in applied, applied
        waiting.wait_until(
            lambda: (h := handoff_of(version_1, spark)) is not None and not h.pending,
            timeout=TIMEOUT_S,
            message="generation 1's run never answered the handoff",
        )
        taken = handoff_of(version_1, spark)
        assert taken is not None and taken.acknowledged is not None, taken
        assert taken.acknowledged.batch_watermark_ms < boundary

        with driver_process.started(stream.run(VERSION_2), tmp_path) as new_run:
            log.produce(stream.topic, stream.rest)
            # Generation 1 stops by itself once a batch ran with its watermark at C.
            waiting.wait_until(
                lambda: old_run.ended, timeout=TIMEOUT_S, message="generation 1 never stopped"
            )
            assert old_run.summary().stopped_by == "handed over"
            # Generation 2 writes [10:50, 11:00) once its watermark (11:06) passes 11:00.
            waiting.wait_until(
                lambda: (committed_watermark(new) or 0) >= at(66) or not new_run.running,
                timeout=TIMEOUT_S,
                message="generation 2 never reached W = 11:06",
            )
            assert new_run.running, new_run.output

    written = {
        f"generation {n}": oracle.written_rows(spark, layout.output)
        for n, layout in ((1, old), (2, new))
    }
    # Each owns its side of C.
    assert written["generation 1"] and all(
        start + GRID.size_ms <= boundary for start, _, _ in written["generation 1"]
    )
    assert written["generation 2"] and all(
        start + GRID.size_ms > boundary for start, _, _ in written["generation 2"]
    )
    comparison = oracle.Comparison(
        oracle.expected_counts(log.events, GRID, written_through_ms=committed_watermark(new) or 0),
        written,
        log.events,
        GRID,
    )
    with open_store(version_1.ledger, spark=lambda: spark) as store:
        retired = store.generation(version_1.pipeline.name, 1)
    # Handed over, said where only generation 1 writes: its own record.
    assert retired is not None and retired.status is GenerationStatus.RETIRED
    verify_says(
        comparison.exact,
        comparison.report(),
        version_2,
        spark,
        from_ms=at(0) - GRID.size_ms,
    )
    comparison.check()


def test_a_handoff_answered_after_the_watermark_passed_c_is_refused(
    spark: SparkSession, stream: Stream, tmp_path: Path
) -> None:
    """The negative control: generation 1's driver is held (SIGSTOP) from the apply until its
    JVM committed a batch with the watermark past C; then it must refuse, go on writing every
    window itself, and generation 2 must refuse to start, in one line."""
    log, old = stream.log, stream.old
    version_1 = stream.version_1
    boundary = at(50)

    # The built-in connector, whatever the suite's: holding the driver's Python must leave
    # the JVM running batches, and with the python connector it holds them too (seen: no
    # batch in 240 s).
    builtin = "kafka.connector=builtin"
    with driver_process.started(stream.run(builtin), tmp_path) as old_run:
        waiting.wait_until(
            lambda: (committed_watermark(old) or 0) >= at(34) or not old_run.running,
            timeout=TIMEOUT_S,
            message="generation 1 never reached W = 10:34",
        )
        assert old_run.running, old_run.output
        old_run.pause()  # its Python: the JVM runs batches, nobody reads the ledger
        try:
            apply_command(
                stream.settings(builtin, VERSION_2),
                accept_data_loss=False,
                handoff_at_ms=boundary,
                spark=lambda: spark,
            )
            log.produce(stream.topic, stream.rest)
            waiting.wait_until(
                lambda: (committed_watermark(old) or 0) >= boundary,
                timeout=TIMEOUT_S,
                message="generation 1's JVM never ran a batch past C",
            )
        finally:
            old_run.resume()
        waiting.wait_until(
            lambda: (h := handoff_of(version_1, spark)) is not None and not h.pending,
            timeout=TIMEOUT_S,
            message="generation 1's run never answered the handoff",
        )
        answered = handoff_of(version_1, spark)
        assert answered is not None and answered.acknowledged is None
        assert answered.refused is not None and "had reached C" in answered.refused
        # Generation 2 refuses in one line, exit code 3, and writes nothing.
        with driver_process.started(stream.run(builtin, VERSION_2), tmp_path) as new_run:
            assert new_run.wait(TIMEOUT_S) == 3, new_run.output
        assert "refused the handoff to generation 2" in new_run.output, new_run.output
        assert "Traceback" not in new_run.output
        # Generation 1 goes on unbounded: it writes [10:50, 11:00) itself (W reaches 11:06).
        waiting.wait_until(
            lambda: (committed_watermark(old) or 0) >= at(66) or not old_run.running,
            timeout=TIMEOUT_S,
            message="generation 1 stopped writing after it refused",
        )
        assert old_run.running, old_run.output

    comparison = oracle.Comparison(
        oracle.expected_counts(log.events, GRID, written_through_ms=committed_watermark(old) or 0),
        {"generation 1": oracle.written_rows(spark, old.output)},
        log.events,
        GRID,
    )
    comparison.check()
    assert oracle.written_rows(spark, stream.new.output) == []
