"""A driver killed after ``offsets/0`` and before ``commits/0`` loses nothing on restart.

Spark then asks the source for its initial offset again. With startingOffsets=latest a
fresh answer would lie past the records that arrived meanwhile, and they would be skipped
without an error. The source persists its first answer, so the restart replays batch 0
exactly and goes on from there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import support.pykafka_streams as streams
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade.testing._waiting import wait_until

pytestmark = pytest.mark.integration

BASE_MS = 1_600_000_000_000
# A JVM starting from cold on a busy machine.
DRIVER_START_TIMEOUT_S = 120


@pytest.fixture
def stalled_driver(
    kafka_backend: testing.KafkaBackend, tmp_path: Path
) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    """A topic, a checkpoint and a driver process reading it that stalls in batch 0."""
    topic = testing.unique_topic("crash")
    testing.create_topic(kafka_backend.bootstrap_servers, topic, 2)
    testing.produce(kafka_backend.bootstrap_servers, topic, records(0, 4))
    checkpoint = tmp_path / "checkpoint"
    log = (tmp_path / "driver.log").open("wb")
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "support.stalled_driver",
            kafka_backend.bootstrap_servers,
            topic,
            str(checkpoint),
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        stdout=log,
        stderr=subprocess.STDOUT,
        # Its own process group, so that one signal kills it and its JVM together.
        start_new_session=True,
    )
    try:
        yield topic, checkpoint, driver
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        log.close()


def records(first: int, count: int) -> list[testing.Record]:
    return [
        testing.Record(i % 2, b"k%d" % i, b"v%d" % i, BASE_MS + i)
        for i in range(first, first + count)
    ]


def test_a_driver_killed_before_the_first_commit_loses_nothing_on_restart(
    spark: SparkSession,
    kafka_backend: testing.KafkaBackend,
    stalled_driver: tuple[str, Path, subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    topic, checkpoint, driver = stalled_driver
    bootstrap = kafka_backend.bootstrap_servers

    def driver_alive_and(path: Path) -> bool:
        if driver.poll() is not None:
            log = (tmp_path / "driver.log").read_text(errors="replace")[-3000:]
            raise AssertionError(f"the driver exited with {driver.returncode}:\n{log}")
        return path.exists()

    initial = streams.initial_offsets_file(checkpoint)
    wait_until(
        lambda: driver_alive_and(initial),
        timeout=DRIVER_START_TIMEOUT_S,
        message="the driver to resolve its initial offsets",
    )
    in_batch_0 = records(4, 6)
    testing.produce(bootstrap, topic, in_batch_0)
    wait_until(
        lambda: driver_alive_and(checkpoint / "offsets" / "0"),
        timeout=streams.QUERY_TIMEOUT_S,
        message="the driver to plan batch 0",
    )
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert not (checkpoint / "commits" / "0").exists()
    persisted = initial.read_bytes()
    # Batch 0 may have been planned before or after the records arrived: both are the trap.
    batch_0_end = json.loads((checkpoint / "offsets" / "0").read_text().splitlines()[2])[topic]
    after_crash = records(10, 4)
    testing.produce(bootstrap, topic, after_crash)

    run = streams.start_query(
        spark,
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "latest"},
        checkpoint,
    )
    try:
        first_offsets = {0: 2, 1: 2}
        expected = streams.expected_rows(
            topic, in_batch_0 + after_crash, first_offsets=first_offsets
        )
        assert run.wait_for_rows(len(expected)) == expected
        # Batch 0 ran again over exactly the records the killed driver had planned.
        assert run.batches[0] == [r for r in expected if r.offset < batch_0_end[str(r.partition)]]
    finally:
        run.stop()
    assert initial.read_bytes() == persisted == b'\x00v1\n{"%s":{"0":2,"1":2}}' % topic.encode()
