"""`run` as an operator starts it: a process that SIGTERM stops after its batch commits."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import pyspark_kafka_upgrade.testing._driver_process as driver_process
import support.pipelines as pipelines
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.checkpoint.reader import (
    read_checkpoint,
)
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
)
from support.example import MODULE

pytestmark = pytest.mark.integration

# A JVM starting cold on a busy 2-core machine, then its first batch.
FIRST_BATCH_TIMEOUT_S = 240
STOP_TIMEOUT_S = 180


def test_sigterm_lets_the_batch_in_flight_commit_and_exits_cleanly(
    kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> None:
    bootstrap = kafka_backend.bootstrap_servers
    topic = testing.unique_topic("sigterm")
    testing.create_topic(bootstrap, topic, 2)
    times = [pipelines.BASE_MS + i * pipelines.MINUTE_MS for i in range(30)]
    testing.produce(bootstrap, topic, pipelines.page_views(["a1"], times, partitions=2))
    root = tmp_path / "pipeline"
    command = [
        sys.executable,
        "-m",
        MODULE,
        f"--set=pipeline.name={topic}",
        f"--set=pipeline.root={root}",
        f"--set=kafka.bootstrap_servers={bootstrap}",
        f"--set=kafka.topics={topic}",
        "--set=kafka.max_offsets_per_trigger=5",
        "--set=sink.trigger_interval=1 second",
        *(f"--set={override}" for override in pipelines.ledger_overrides(tmp_path)),
        "run",
        "--master=local[1]",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    stopped = driver_process.sigterm_after_second_batch(
        command,
        cwd=tmp_path,
        env=env,
        start_timeout=FIRST_BATCH_TIMEOUT_S,
        stop_timeout=STOP_TIMEOUT_S,
    )
    returncode, before_signal, output = stopped.returncode, stopped.before_signal, stopped.output

    assert returncode == 0, output
    assert "SIGTERM: stopping after the batches in flight" in output
    assert "stopped (stop request)" in output.splitlines()[-1]
    layout = GenerationLayout(str(root), 1)
    state = read_checkpoint(layout.checkpoint)
    assert state.last_committed_batch is not None
    # The backlog keeps batches running back to back, so a batch was in flight when the
    # signal came: the one after the last reported. It must have committed.
    reported = [int(line.split()[1]) for line in before_signal if "  aggregates  " in line]
    assert state.last_committed_batch >= max(reported) + 1
    # The batch that began after it, if any, was interrupted; Spark replays it on restart.
    assert set(state.planned_not_committed) <= {state.last_committed_batch + 1}
    assert f"committed aggregates to batch {state.last_committed_batch}" in output
    assert not Path(layout.run_lock).exists()
