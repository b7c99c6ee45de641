"""The pipeline on a Delta table (``sink.format = "delta"``): every generation appends to one
table, the upgrade stays exact in it, another engine reads it back, and a batch re-run after a
crash between the table's commit and the checkpoint's is not appended twice.

The oracle reads the table with delta-rs (``testing._proof.delta_rows``), not through the
sink under test, which reads it with Spark.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._driver_process as driver_process
import pyspark_kafka_upgrade.testing._oracle as oracle
import support.pipelines as pipelines
import support.proofs as proofs
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.sink.delta_writer import (
    FAILPOINT_ENV_VAR,
)
from pyspark_kafka_upgrade._application.checkpoint_show.show import (
    show_checkpoint,
)
from pyspark_kafka_upgrade._application.output_show import (
    show_output,
)
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._application.upgrade.commands import (
    apply_command,
    plan_command,
    rollback_command,
)
from pyspark_kafka_upgrade._core.settings import (
    load_settings,
)
from pyspark_kafka_upgrade._domain.records.record_errors import (
    UpgradeError,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
    table_location,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing import (
    KafkaBackend,
)
from pyspark_kafka_upgrade.testing._proof import delta_rows, verify_says

pytestmark = pytest.mark.integration

DELTA = "sink.format=delta"
KILL_TIMEOUT_S = 240
GRID = oracle.Grid(size_ms=10 * pipelines.MINUTE_MS)


def test_an_upgrade_into_one_delta_table_is_exact_and_reads_back_outside_spark(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    # The table at a location of its own, registered by the runs under a name in the
    # catalog of the session they run on (this test's; a metastore is Spark's own business:
    # the runs only issue CREATE TABLE ... LOCATION, tests/unit/test_delta_catalog.py).
    table = str(tmp_path / "tables" / "page_view_counts")
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {TABLE_NAME.split('.')[0]}")
    try:
        report = proofs.prove(
            PROJECT,
            spark,
            kafka_backend,
            tmp_path,
            DELTA,
            f"sink.table_location={table}",
            f"sink.table_name={TABLE_NAME}",
        )
        by_name = sorted(
            (row.generation, row.window_start, row.article_id, row.views, row.users)
            for row in spark.table(TABLE_NAME).collect()
        )
        registered_at = _location_of(spark, TABLE_NAME)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {TABLE_NAME}")  # the session outlives this test
    assert report.exact, report.explain()
    assert report.verified is not None and report.verified.ok
    assert {g for writers in report.written.values() for g, _ in writers} == {1, 2}
    assert report.settings is not None
    assert not (tmp_path / "pipeline" / "output").exists()
    quarantine = table_location(report.settings.pipeline.root, quarantine=True)
    assert DeltaTable(quarantine).version() >= 0  # the quarantine stays under the root

    # delta-rs, with no JVM, reads the rows `output show` prints: every window once.
    shown = json.loads(show_output(report.settings, spark=spark, limit=None, as_json=True))
    assert shown["output"] == table and shown["format"] == "delta"
    read_by_delta_rs = sorted(
        (row["generation"], row["window_start"], row["article_id"], row["views"], row["users"])
        for generation in (1, 2)
        for row in delta_rows(table, generation)
    )
    printed = sorted(
        (
            row["generation"],
            datetime.fromisoformat(row["window_start"].replace("Z", "+00:00")),
            row["article_id"],
            row["views"],
            row["users"],
        )
        for row in shown["rows"]
    )
    assert read_by_delta_rs == printed
    # Spark, by the name the runs registered over the location, reads exactly what
    # delta-rs reads there.
    assert registered_at.rstrip("/").endswith(table.lstrip("/")), registered_at
    assert [(g, _utc(w), a, v, u) for g, w, a, v, u in by_name] == read_by_delta_rs
    windows = [(start, article) for _, start, article, _, _ in read_by_delta_rs]
    assert len(windows) == len(set(windows)) == len(report.expected)
    # Version 1 computed no users: null in its rows, a column of the one table since 2.
    assert {users for generation, _, _, _, users in read_by_delta_rs if generation == 1} == {None}

    # The table's history: generation 1's batches, then generation 2's, one commit each.
    history = DeltaTable(table).history()
    marks = [json.loads(commit["userMetadata"]) for commit in reversed(history)]
    generations = [mark["generation"] for mark in marks]
    assert generations == sorted(generations) and set(generations) == {1, 2}
    for generation in (1, 2):
        batches = [mark["batch"] for mark in marks if mark["generation"] == generation]
        assert batches == list(range(len(batches))), (generation, batches)

    # `checkpoint show` reads what generation 2 committed from the table's log.
    checkpoint = json.loads(
        show_checkpoint(
            report.settings,
            path=None,
            generation=None,
            sink=None,
            as_json=True,
            spark=lambda: spark,
        )
    )
    last = max(mark["batch"] for mark in marks if mark["generation"] == 2)
    assert checkpoint["sink"]["uri"] == table
    assert checkpoint["sink"]["last_batch_id"] == last
    assert checkpoint["sink"]["last_batch_matches_checkpoint"] is True
    assert checkpoint["sink"]["damaged"] == []

    # An upgrade to a generation 3 that commits nothing to the table can be rolled back;
    # once it has committed a batch, it cannot.
    aggregation = report.settings.aggregation
    metrics = {**aggregation.metrics, "events": "count(*)"}
    version_3 = dataclasses.replace(
        report.settings, aggregation=dataclasses.replace(aggregation, metrics=metrics)
    )
    apply_command(version_3, accept_data_loss=False, spark=lambda: spark)
    said = rollback_command(version_3, spark=lambda: spark)
    assert "generation 3 retired unused" in said, said


TABLE_NAME = "analytics.page_view_counts"


def _location_of(spark: SparkSession, name: str) -> str:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    return str(next(row.data_type for row in rows if row.col_name == "Location"))


def _utc(moment: object) -> datetime:
    assert isinstance(moment, datetime)
    return moment if moment.tzinfo else moment.astimezone(UTC)


def test_a_replay_without_the_filter_writes_windows_twice_in_the_table(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    broken = proofs.with_idle_replay_filter(PROJECT, tmp_path)

    report = proofs.prove(broken, spark, kafka_backend, tmp_path, DELTA)

    # prove_upgrade has checked that verify says so too.
    assert not report.exact
    assert report.written_twice and report.different, report.explain()


def test_a_kill_9_between_the_table_commit_and_the_checkpoint_commit_appends_no_batch_twice(
    spark: SparkSession,
    kafka_backend: KafkaBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("delta-kill")
    testing.create_topic(bootstrap, topic, 2)
    log = oracle.EventLog(bootstrap)
    times = [pipelines.BASE_MS + minute * pipelines.MINUTE_MS for minute in range(60)]
    log.produce(topic, pipelines.page_views(["a1", "a2", "a3"], times, 2))
    overrides = pipelines.pipeline_overrides(
        tmp_path,
        bootstrap,
        topic,
        DELTA,
        "kafka.max_offsets_per_trigger=12",
        "pipeline.state_partitions=1",
    )
    settings = load_settings(PROJECT, env={}, overrides=overrides).settings
    checkpoint = Path(GenerationLayout(str(tmp_path / "pipeline"), 1).checkpoint)
    table = table_location(str(tmp_path / "pipeline"))
    killed_at = 2  # a batch that writes windows: the watermark has passed some ends by then
    run = [*(f"--set={override}" for override in overrides), "run", "--master=local[1]"]

    monkeypatch.setenv(FAILPOINT_ENV_VAR, f"aggregates:{killed_at}")
    with driver_process.started(run, tmp_path) as driver:
        code = driver.wait(KILL_TIMEOUT_S)
    monkeypatch.delenv(FAILPOINT_ENV_VAR)

    # The crash landed where it must: the table has the batch, the checkpoint does not.
    assert code == -9, f"the run was not killed (exit {code}):\n{driver.output}"
    (last_commit,) = DeltaTable(table).history(limit=1)
    assert json.loads(last_commit["userMetadata"]) == {"generation": 1, "batch": killed_at}
    assert oracle.committed_batches(checkpoint)[-1] == killed_at - 1
    assert killed_at in oracle.planned_batches(checkpoint)
    assert delta_rows(table, 1), "the killed batch wrote no window: this trial proves nothing"

    # A plan made now would write that batch's windows again: refused, from the table's log.
    version_2 = load_settings(PROJECT, env={}, overrides=[*overrides, proofs.USERS]).settings
    with pytest.raises(UpgradeError, match=f"output holds batch {killed_at} but its checkpoint"):
        plan_command(version_2, as_json=True, accept_data_loss=False, spark=lambda: spark)

    # The restart re-runs that batch; the table's transaction skips its second append.
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)

    final_w = oracle.final_watermark_ms(checkpoint)
    written = [
        (round(row["window_start"].timestamp() * 1000), row["article_id"], int(row["views"]))
        for row in delta_rows(table, 1)
    ]
    comparison = oracle.Comparison(
        oracle.expected_counts(log.events, GRID, written_through_ms=final_w),
        {"generation 1": written},
        log.events,
        GRID,
    )
    verify_says(
        comparison.exact,
        comparison.report(),
        settings,
        spark,
        from_ms=pipelines.BASE_MS - 10 * pipelines.MINUTE_MS,
    )
    comparison.check()
    history = DeltaTable(table).history()
    batches = [json.loads(commit["userMetadata"])["batch"] for commit in reversed(history)]
    assert batches == sorted(set(batches)), f"a batch was committed twice: {batches}"
