"""Every refusal of `upgrade` says why, exits non-zero, and changes nothing on disk."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

import support.pipelines as pipelines
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.storage.run_lock import (
    RunLock,
)
from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    run_pipeline,
)
from pyspark_kafka_upgrade._core.settings import (
    load_settings,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from support.example import MODULE, main

pytestmark = pytest.mark.integration

VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with a hash of its content, and every directory, even an
    empty one: what "nothing changed" means."""
    return {
        str(path.relative_to(root)): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "directory"
        )
        for path in sorted(root.rglob("*"))
    }


@pytest.fixture
def ran(
    spark: SparkSession, kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> tuple[list[str], str]:
    """Generation 1 of a pipeline ran over 40 events; returns its --set options and topic."""
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("refusals")
    testing.create_topic(bootstrap, topic, 2)
    times = [pipelines.BASE_MS + i * pipelines.MINUTE_MS for i in range(40)]
    testing.produce(bootstrap, topic, pipelines.page_views(["a1", "a2"], times, partitions=2))
    overrides = pipelines.pipeline_overrides(tmp_path, bootstrap, topic)
    settings = load_settings(PROJECT, env={}, overrides=overrides).settings
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)
    return [f"--set={o}" for o in [*overrides, VERSION_2]], topic


def refuse(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    before = snapshot(tmp_path)
    code = main(args)
    assert snapshot(tmp_path) == before, "a refused command changed files"
    return code, capsys.readouterr().err


def test_no_ledger(
    ran: tuple[list[str], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, _ = ran
    missing = tmp_path / "nowhere" / "ledger.sqlite"
    code, error = refuse(
        [
            *options,
            "--set=ledger.store=sqlite",
            f"--set=ledger.location={missing}",
            "upgrade",
            "plan",
        ],
        tmp_path,
        capsys,
    )
    assert code == 2
    assert f"no ledger at {missing}" in error


def test_wrong_pipeline_name(
    ran: tuple[list[str], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, topic = ran
    code, error = refuse(
        [*options, "--set=pipeline.name=no-such", "upgrade", "apply"], tmp_path, capsys
    )
    assert code == 2
    assert "knows no pipeline 'no-such'" in error
    assert topic in error  # the names it does know


def test_a_checkpoint_that_is_not_one(
    ran: tuple[list[str], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, _ = ran
    elsewhere = tmp_path / "not-a-pipeline-root"
    elsewhere.mkdir()
    code, error = refuse(
        [*options, f"--set=pipeline.root={elsewhere}", "upgrade", "apply"], tmp_path, capsys
    )
    assert code == 1
    assert "no checkpoint at" in error


def test_an_old_run_still_active(
    ran: tuple[list[str], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, _ = ran
    lock = GenerationLayout(str(tmp_path / "pipeline"), 1).run_lock
    with RunLock(lock, purpose="run"):
        code, error = refuse([*options, "upgrade", "apply"], tmp_path, capsys)
    assert code == 75
    assert "is held" in error or "held by" in error


def test_a_plan_already_applied(
    ran: tuple[list[str], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, _ = ran
    assert main([*options, "upgrade", "apply", "--no-scan"]) == 0
    code, error = refuse([*options, "upgrade", "apply"], tmp_path, capsys)
    assert code == 3
    assert "already planned and applied" in error


def test_offsets_out_of_retention(
    ran: tuple[list[str], str],
    kafka_backend: testing.KafkaBackend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    options, topic = ran
    # Retention deletes partition 0 up to offset 17; the open window needs it from 15 on.
    admin = AdminClient({"bootstrap.servers": kafka_backend.bootstrap_servers})
    for future in admin.delete_records([TopicPartition(topic, 0, 17)]).values():
        future.result(timeout=30)
    code, error = refuse([*options, "upgrade", "plan"], tmp_path, capsys)
    assert code != 0
    # Batch 0 read everything, so the batch-level restart is offset 0; the deleted records'
    # event times are unknowable, so the planner cannot rule them out.
    assert "partition 0 needs offset 0, the earliest available is 17" in error
    assert "--accept-data-loss" in error


def cli_without_java(
    options: list[str], *arguments: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """The CLI as its own process on a machine with no Java: any JVM start would fail."""
    path = os.pathsep.join(
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if not (Path(entry) / "java").exists()
    )
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")},
        "PATH": path,
        "JAVA_HOME": str(cwd / "no-java-here"),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    # -X importtime: every module the command imports, on stderr (imported_spark reads it).
    return subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            MODULE,
            *arguments[:2],
            *options,
            *arguments[2:],
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def imported_spark(importtime: str) -> list[str]:
    """The modules of pyspark and py4j in ``python -X importtime``'s report."""
    return [name for name in imported(importtime) if name.split(".")[0] in ("pyspark", "py4j")]


def imported(importtime: str) -> list[str]:
    """Every module in ``python -X importtime``'s report."""
    return [
        line.rsplit("|", 1)[1].strip()
        for line in importtime.splitlines()
        if line.startswith("import time:")
    ]


# What only a scan or a picture needs: `apply` of a reviewed plan does neither.
SCAN_AND_PICTURE = (
    "orjson",
    "pyspark_kafka_upgrade._application.upgrade.event_scan",
    "pyspark_kafka_upgrade._application.upgrade.picture",
    "matplotlib",
)


def test_a_reviewed_plan_is_made_and_applied_without_a_jvm(
    ran: tuple[list[str], str], tmp_path: Path
) -> None:
    options, topic = ran
    plan_file = tmp_path / "upgrade.json"
    planned = cli_without_java(options, "upgrade", "plan", "--out", str(plan_file), cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert f"Plan written to {plan_file}" in planned.stdout
    applied = cli_without_java(options, "upgrade", "apply", str(plan_file), cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    # The pipeline is down meanwhile: importing Spark's modules (0.3 s) would lengthen that.
    assert imported_spark(planned.stderr) == [] and imported_spark(applied.stderr) == []
    assert "pyspark_kafka_upgrade._application.upgrade.event_scan" in imported(planned.stderr)
    assert [name for name in imported(applied.stderr) if name in SCAN_AND_PICTURE] == []
    assert "generation 2 planned and applied" in applied.stdout
    # The open window 10:30-10:40 holds events 30..39: offsets 15..19 of each partition.
    starts = json.dumps({topic: {"0": 15, "1": 15}}, separators=(",", ":"))
    assert f"starts at   {starts}" in applied.stdout


def test_a_plan_is_refused_once_the_old_generation_committed_more(
    ran: tuple[list[str], str],
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    options, topic = ran
    plan_file = tmp_path / "upgrade.json"
    assert main([*options, "upgrade", "plan", "--out", str(plan_file)]) == 0
    # Generation 1 runs once more after the review: ten more events, one more batch.
    times = [pipelines.BASE_MS + i * pipelines.MINUTE_MS for i in range(40, 50)]
    testing.produce(
        kafka_backend.bootstrap_servers,
        topic,
        pipelines.page_views(["a1", "a2"], times, partitions=2),
    )
    settings_1 = load_settings(
        PROJECT, env={}, overrides=[o.removeprefix("--set=") for o in options[:-1]]
    ).settings
    before_run = last_commit(GenerationLayout(settings_1.pipeline.root, 1).checkpoint)
    run_pipeline(RunRequest(settings=settings_1, available_now=True, echo=lambda _: None), spark)
    after_run = last_commit(GenerationLayout(settings_1.pipeline.root, 1).checkpoint)
    assert after_run > before_run
    code, error = refuse([*options, "upgrade", "apply", str(plan_file)], tmp_path, capsys)
    assert code == 2
    assert error.count("\n") == 1, error
    assert "is stale, nothing was applied" in error
    assert f"committed up to batch {after_run} since the plan, which was made after batch " in (
        error
    )


def last_commit(checkpoint: str) -> int:
    """The highest ``commits/N`` (Spark also keeps ``.N.crc`` files there)."""
    return max(int(p.name) for p in (Path(checkpoint) / "commits").iterdir() if p.name.isdigit())
