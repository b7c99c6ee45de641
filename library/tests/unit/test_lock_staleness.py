"""When a run lock's holder is dead: the rules on their own, without a lock file."""

from __future__ import annotations

from pyspark_kafka_upgrade._adapters.storage.lock_staleness import (
    Taker,
    Verdict,
    format_age,
    judge_holder,
    judge_unreadable,
)
from pyspark_kafka_upgrade._adapters.storage.process_table import ProcessState
from pyspark_kafka_upgrade._adapters.storage.run_lock import LockRecord

NOW = 1_800_000_000_000
URI = "s3a://bucket/checkpoints/generation-1/run.lock"
HERE = Taker(host="worker-1", host_id="boot/pid:[1]", pid=100, lease_ms=60_000)


def _holder(*, host: str = "worker-1", pid: int = 4242, heartbeat_age_ms: int = 0) -> LockRecord:
    return LockRecord(
        token="t",
        purpose="run",
        host=host,
        host_id="boot/pid:[1]",
        pid=pid,
        process_start="77",
        acquired_at_ms=NOW - 1000,
        heartbeat_at_ms=NOW - heartbeat_age_ms,
        lease_ms=60_000,
    )


def test_on_this_machine_the_process_table_decides_whatever_the_heartbeat() -> None:
    gone = judge_holder(
        _holder(), NOW, uri=URI, taker=HERE, process_state=lambda pid, start: ProcessState.GONE
    )
    assert gone.dead and gone.reason.endswith("pid 4242 is no longer running")
    hung = judge_holder(
        _holder(heartbeat_age_ms=600_000),
        NOW,
        uri=URI,
        taker=HERE,
        process_state=lambda pid, start: ProcessState.RUNNING,
    )
    assert not hung.dead and "probably hung: stop it (kill 4242" in hung.reason


def test_elsewhere_the_heartbeat_decides_and_the_process_table_is_not_asked() -> None:
    def never(pid: int, start: str | None) -> ProcessState:
        raise AssertionError("another machine's pid was looked up here")

    fresh = judge_holder(_holder(host="worker-2"), NOW, uri=URI, taker=HERE, process_state=never)
    assert not fresh.dead and "(in 60 s): try again then" in fresh.reason
    expired = _holder(host="worker-2", heartbeat_age_ms=60_001)
    assert judge_holder(expired, NOW, uri=URI, taker=HERE, process_state=never).dead


def test_an_unreadable_lock_without_a_modification_time_is_left_to_a_person() -> None:
    verdict = judge_unreadable("the file is empty", None, NOW, uri=URI, lease_ms=60_000)
    assert verdict == Verdict(
        False,
        f"the run lock {URI} is not a readable lock (the file is empty) and its store gives no "
        "modification time. If no run or upgrade uses this generation, delete the file and "
        "try again.",
    )


def test_ages_are_whole_seconds_and_never_negative() -> None:
    assert [format_age(ms) for ms in (-5, 0, 1_499, 57_000)] == ["0 s", "0 s", "1 s", "57 s"]
