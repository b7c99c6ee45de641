"""The single-writer guard: refusal, stale takeover, heartbeats, and real races between processes.

No test sleeps for a fixed time: clocks are injected and frozen, heartbeat intervals are tiny
and conditions are polled with a deadline.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

import pyarrow.fs
import pytest

import pyspark_kafka_upgrade.testing._waiting as waiting
from pyspark_kafka_upgrade._adapters.storage.filesystem import (
    Location,
    StorageError,
)
from pyspark_kafka_upgrade._adapters.storage.process_table import (
    ProcessState,
    host_identity,
    process_start_marker,
)
from pyspark_kafka_upgrade._adapters.storage.run_lock import (
    LockRecord,
    RunLock,
    RunLockError,
    RunLockHeldError,
)

NOW = 1_800_000_000_000  # a frozen wall clock, in epoch ms
HOST = socket.gethostname()
LOGGER = RunLock.__module__
HAS_PROC = Path("/proc/self/stat").exists()
# Spawned, not forked: a fork copies this process's threads' locks in whatever state they are.
SPAWN = multiprocessing.get_context("spawn")


class FakeClock:
    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


def _record(
    *,
    heartbeat_at_ms: int,
    pid: int,
    host: str = HOST,
    host_id: str | None = None,
    process_start: str | None = None,
    token: str = "0123456789abcdef",
    lease_ms: int = 60_000,
) -> LockRecord:
    return LockRecord(
        token=token,
        purpose="run",
        host=host,
        host_id=host_identity() if host == HOST else host_id,
        pid=pid,
        process_start=process_start,
        acquired_at_ms=heartbeat_at_ms - 1000,
        heartbeat_at_ms=heartbeat_at_ms,
        lease_ms=lease_ms,
    )


def _plant(path: Path, content: bytes) -> None:
    """Put a lock file in place the way a holder would: whole, by rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(".planted.tmp")
    temporary.write_bytes(content)
    temporary.replace(path)


def _holder(path: Path) -> LockRecord:
    return LockRecord.from_json(path.read_bytes())


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


@pytest.fixture
def lock_path(tmp_path: Path) -> Path:
    return tmp_path / "checkpoints" / "generation-1" / "run.lock"


@pytest.fixture(autouse=True)
def _capture_warnings(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)


# -- one process ---------------------------------------------------------------------------


def test_acquire_writes_the_holder_and_release_leaves_no_file(lock_path: Path) -> None:
    with RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW)) as lock:
        assert lock.held
        assert _holder(lock_path) == LockRecord(
            token=lock.token,
            purpose="run",
            host=HOST,
            host_id=host_identity(),
            pid=os.getpid(),
            process_start=process_start_marker(os.getpid()),
            acquired_at_ms=NOW,
            heartbeat_at_ms=NOW,
            lease_ms=60_000,
        )
        # The guard file of the critical section is gone as soon as the section ends.
        assert [p.name for p in lock_path.parent.iterdir()] == ["run.lock"]
    assert not lock.held
    assert not lock.lost
    # The lock made checkpoints/generation-1/ for its file, and removes both again.
    assert not lock_path.parent.parent.exists()


def test_release_keeps_directories_that_hold_anything(lock_path: Path) -> None:
    with RunLock(str(lock_path), purpose="run"):
        (lock_path.parent / "aggregates").mkdir()  # as a query's checkpoint would be
    assert sorted(p.name for p in lock_path.parent.iterdir()) == ["aggregates"]


def test_release_keeps_directories_that_were_there_before(lock_path: Path) -> None:
    lock_path.parent.mkdir(parents=True)
    with RunLock(str(lock_path), purpose="run"):
        pass
    assert list(lock_path.parent.iterdir()) == []


def test_a_failed_acquire_removes_the_directories_it_made(
    lock_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Location, data: bytes) -> None:
        raise StorageError("the disk is full")

    monkeypatch.setattr(Location, "write_atomically", refuse)
    lock = RunLock(str(lock_path), purpose="run")
    with pytest.raises(RunLockError, match="the disk is full"):
        lock.acquire()
    assert not lock.held
    assert list(lock_path.parent.parent.parent.iterdir()) == []  # tmp_path as it was


def test_file_uris_work_like_paths(lock_path: Path) -> None:
    with RunLock(lock_path.as_uri(), purpose="run"):
        assert lock_path.exists()
    assert not lock_path.exists()


def test_a_second_acquire_is_refused_while_the_first_holds(
    lock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW)) as first:
        second = RunLock(str(lock_path), purpose="upgrade apply", clock=FakeClock(NOW + 3000))
        with pytest.raises(RunLockHeldError) as caught:
            second.acquire()
        assert str(caught.value) == (
            f"the generation is in use: {lock_path} is held by 'run' (pid {os.getpid()} on "
            f"host {HOST}, since 2027-01-15 08:00:00 UTC, last heartbeat 3 s ago). Stop that "
            "run first: SIGTERM (Ctrl-C) lets its current batch finish. If its machine is "
            "gone, the lock counts as abandoned once its lease of 60 s has passed since its "
            "last heartbeat (in 57 s): try again then."
        )
        assert caught.value.exit_code == 75
        assert not second.held
        assert _holder(lock_path).token == first.token
    with second:
        assert _holder(lock_path).purpose == "upgrade apply"
    assert caplog.records == []


def test_a_lock_of_a_dead_pid_on_this_host_is_taken_over_with_one_warning(
    lock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    # Its start time too, so that even a reuse of the pid by then would count as dead.
    start = process_start_marker(child.pid)
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait(timeout=30) == 0
    _plant(lock_path, _record(pid=child.pid, process_start=start, heartbeat_at_ms=NOW).to_json())

    with RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW)) as lock:
        assert _holder(lock_path).token == lock.token
    assert _messages(caplog, logging.WARNING) == [
        f"took over the run lock {lock_path} from a dead holder: 'run' (pid {child.pid} on "
        f"host {HOST}, since 2027-01-15 07:59:59 UTC, last heartbeat 0 s ago): pid "
        f"{child.pid} is no longer running"
    ]


@pytest.mark.skipif(not HAS_PROC, reason="process start times come from /proc")
def test_a_reused_pid_is_no_holder(lock_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # This process is alive, but it did not start when the planted holder did.
    planted = _record(pid=os.getpid(), process_start="1", heartbeat_at_ms=NOW)
    _plant(lock_path, planted.to_json())
    with RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW)):
        pass
    [warning] = _messages(caplog, logging.WARNING)
    assert warning.endswith(
        f"pid {os.getpid()} now belongs to another process (its start time differs)"
    )


@pytest.fixture
def live_process() -> Iterator[int]:
    """The pid of another process of this host that runs until the test ends."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    assert child.stdin is not None
    try:
        yield child.pid
    finally:
        child.stdin.close()
        child.wait(timeout=30)


@pytest.mark.skipif(not HAS_PROC, reason="process start times come from /proc")
def test_a_live_holder_on_this_host_is_refused_even_with_an_overdue_heartbeat(
    lock_path: Path, live_process: int
) -> None:
    # Alive but silent for ten minutes: hung or suspended (Ctrl-Z), and it would resume
    # writing after a takeover.
    planted = _record(
        pid=live_process, process_start=process_start_marker(live_process), heartbeat_at_ms=NOW
    )
    _plant(lock_path, planted.to_json())
    lock = RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW + 600_000))
    with pytest.raises(RunLockHeldError, match="probably hung") as caught:
        lock.acquire()
    assert f"stop it (kill {live_process}, or kill -9 {live_process}" in str(caught.value)
    assert _holder(lock_path) == planted


@pytest.mark.skipif(not HAS_PROC, reason="process start times come from /proc")
@pytest.mark.parametrize(("heartbeat_age_ms", "taken_over"), [(60_000, False), (60_001, True)])
def test_a_lock_this_process_left_behind_is_stale_once_its_lease_has_passed(
    lock_path: Path, caplog: pytest.LogCaptureFixture, heartbeat_age_ms: int, taken_over: bool
) -> None:
    planted = _record(
        pid=os.getpid(),
        process_start=process_start_marker(os.getpid()),
        heartbeat_at_ms=NOW - heartbeat_age_ms,
    )
    _plant(lock_path, planted.to_json())
    lock = RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW))
    if taken_over:
        with lock:
            pass
        [warning] = _messages(caplog, logging.WARNING)
        assert warning.endswith("left behind by this process")
    else:
        # Another RunLock of this process may hold it and heartbeat: within the lease, held.
        with pytest.raises(RunLockHeldError, match=f"pid {os.getpid()}"):
            lock.acquire()


@pytest.mark.parametrize(
    ("heartbeat_age_ms", "taken_over"), [(5_000, False), (60_000, False), (60_001, True)]
)
def test_a_pid_that_cannot_be_told_apart_is_judged_by_its_heartbeat(
    lock_path: Path, heartbeat_age_ms: int, taken_over: bool
) -> None:
    _plant(lock_path, _record(pid=4242, heartbeat_at_ms=NOW - heartbeat_age_ms).to_json())
    asked: list[tuple[int, str | None]] = []

    def pid_in_use(pid: int, start: str | None) -> ProcessState:
        asked.append((pid, start))
        return ProcessState.UNKNOWN

    lock = RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW), process_state=pid_in_use)
    with contextlib.ExitStack() as stack:
        if not taken_over:
            stack.enter_context(pytest.raises(RunLockHeldError, match="pid 4242"))
        lock.acquire()
        lock.release()
    assert asked == [(4242, None)]


def test_another_hosts_lock_with_a_fresh_heartbeat_is_refused(lock_path: Path) -> None:
    planted = _record(pid=4242, host="elsewhere", heartbeat_at_ms=NOW - 5_000)
    _plant(lock_path, planted.to_json())
    with pytest.raises(RunLockHeldError) as caught:
        RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW)).acquire()
    message = str(caught.value)
    assert "'run' (pid 4242 on host elsewhere, since 2027-01-15 07:59:54 UTC" in message
    assert "last heartbeat 5 s ago" in message
    assert "lease of 60 s has passed since its last heartbeat (in 55 s)" in message
    assert _holder(lock_path) == planted


def test_another_hosts_lock_with_an_expired_heartbeat_is_taken_over(
    lock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    planted = _record(pid=4242, host="elsewhere", heartbeat_at_ms=NOW - 60_001)
    _plant(lock_path, planted.to_json())
    with RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW)) as lock:
        assert _holder(lock_path).token == lock.token
    [warning] = _messages(caplog, logging.WARNING)
    assert "pid 4242 on host elsewhere" in warning
    assert warning.endswith("last heartbeat 60 s ago): its lease of 60 s has expired")


def test_the_same_host_name_on_another_machine_is_judged_by_its_heartbeat(
    lock_path: Path,
) -> None:
    # A container or a rebooted machine with our name: its pids mean nothing here.
    planted = _record(pid=os.getpid(), heartbeat_at_ms=NOW - 60_001)
    planted = dataclasses.replace(planted, host_id="another-boot/pid:[1]")
    _plant(lock_path, planted.to_json())
    with RunLock(str(lock_path), purpose="run", clock=FakeClock(NOW)) as lock:
        assert _holder(lock_path).token == lock.token


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"", "the file is empty"), (b'{"format": 1, "tok', "not valid JSON")],
)
def test_an_unreadable_lock_is_refused_until_the_lease_has_passed_since_it_changed(
    lock_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, problem: str
) -> None:
    _plant(lock_path, content)
    modified_ms = lock_path.stat().st_mtime_ns // 1_000_000
    for age_ms, remaining in [(20_000, "40 s"), (60_000, "0 s")]:
        lock = RunLock(str(lock_path), purpose="run", clock=FakeClock(modified_ms + age_ms))
        with pytest.raises(RunLockHeldError) as caught:
            lock.acquire()
        message = str(caught.value)
        assert f"is not a readable lock ({problem}" in message
        assert f"modified {age_ms // 1000} s ago" in message
        assert f"(in {remaining})" in message
        assert lock_path.read_bytes() == content

    lock = RunLock(str(lock_path), purpose="run", clock=FakeClock(modified_ms + 60_001))
    with lock:
        assert _holder(lock_path).token == lock.token
    [warning] = _messages(caplog, logging.WARNING)
    assert f"an unreadable lock file ({problem}" in warning
    assert warning.endswith("last modified 60 s ago")


def test_a_lease_shorter_than_two_heartbeats_is_refused(lock_path: Path) -> None:
    with pytest.raises(ValueError, match="at least twice"):
        RunLock(str(lock_path), purpose="run", heartbeat_interval_s=10, lease_s=19)


# -- the heartbeat ------------------------------------------------------------------------------


def test_the_heartbeat_advances_heartbeat_at_ms(lock_path: Path) -> None:
    clock = FakeClock(NOW)
    with RunLock(
        str(lock_path), purpose="run", heartbeat_interval_s=0.01, lease_s=1.0, clock=clock
    ) as lock:
        clock.now_ms = NOW + 5_000
        waiting.wait_until(
            lambda: _holder(lock_path).heartbeat_at_ms == NOW + 5_000,
            timeout=10,
            interval=0.005,
            message="the heartbeat never wrote the new time",
        )
        record = _holder(lock_path)
        assert (record.token, record.acquired_at_ms) == (lock.token, NOW)
        assert not lock.lost


def test_a_stolen_lock_sets_lost_and_is_not_deleted_on_release(
    lock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    victim = RunLock(
        str(lock_path), purpose="run", heartbeat_interval_s=0.01, lease_s=1.0, clock=FakeClock(NOW)
    )
    # The thief lives on another host and its clock says our lease expired: a takeover that,
    # on a local filesystem, is serialised with the victim's heartbeats.
    thief = RunLock(
        str(lock_path),
        purpose="upgrade apply",
        clock=FakeClock(NOW + 2_000),
        host="elsewhere",
        pid=4242,
    )
    with victim:
        thief.acquire()
        waiting.wait_until(
            lambda: victim.lost, timeout=10, interval=0.005, message="loss not noticed"
        )
        assert victim.lost_reason is not None
        assert "was taken over by 'upgrade apply' (pid 4242 on host elsewhere" in (
            victim.lost_reason
        )
    assert _holder(lock_path).token == thief.token
    assert victim.lost
    [error] = _messages(caplog, logging.ERROR)
    assert error.endswith("this run no longer has exclusive use of its generation")
    warnings = _messages(caplog, logging.WARNING)
    assert len(warnings) == 2  # the thief's takeover, then the victim's release
    assert warnings[1].startswith(f"run lock {lock_path} now belongs to 'upgrade apply'")
    assert warnings[1].endswith("; left in place")
    thief.release()
    assert not lock_path.exists()


# -- remote stores, simulated -------------------------------------------------------------------


class RemoteFilesystem:
    """pyarrow's in-memory filesystem posing as an object store, with failures and hooks."""

    type_name = "s3"  # an object store: write_atomically writes in place, no rename

    def __init__(self) -> None:
        self.inner: Any = pyarrow.fs.FileSystem.from_uri("mock:///")[0]
        self.down = False
        self.after_write: Callable[[], None] | None = None
        self.before_look: Callable[[], None] | None = None

    def _reachable(self) -> None:
        if self.down:
            raise OSError("store unreachable")

    def get_file_info(self, path: str) -> Any:
        self._reachable()
        hook, self.before_look = self.before_look, None
        if hook is not None:
            hook()
        return self.inner.get_file_info(path)

    def open_input_stream(self, path: str) -> Any:
        self._reachable()
        return self.inner.open_input_stream(path)

    @contextlib.contextmanager
    def open_output_stream(self, path: str) -> Iterator[Any]:
        self._reachable()
        with self.inner.open_output_stream(path) as stream:
            yield stream
        hook, self.after_write = self.after_write, None
        if hook is not None:
            hook()

    def create_dir(self, path: str, *, recursive: bool) -> None:
        self._reachable()
        self.inner.create_dir(path, recursive=recursive)

    def delete_file(self, path: str) -> None:
        self._reachable()
        self.inner.delete_file(path)

    def put(self, path: str, content: bytes) -> None:
        with self.inner.open_output_stream(path) as stream:
            stream.write(content)

    def get(self, path: str) -> LockRecord:
        with self.inner.open_input_stream(path) as stream:
            return LockRecord.from_json(stream.read())


REMOTE_PATH = "bucket/checkpoints/generation-1/run.lock"


@pytest.fixture
def remote() -> tuple[RemoteFilesystem, Location]:
    filesystem = RemoteFilesystem()
    return filesystem, Location(filesystem, REMOTE_PATH, f"s3a://{REMOTE_PATH}")


def test_remote_store_refuses_a_second_holder_and_releases(
    remote: tuple[RemoteFilesystem, Location],
) -> None:
    filesystem, location = remote
    with RunLock(location, purpose="run", settle_s=0, clock=FakeClock(NOW)) as lock:
        assert filesystem.get(REMOTE_PATH).token == lock.token
        with pytest.raises(RunLockHeldError, match=f"s3a://{REMOTE_PATH} is held by 'run'"):
            RunLock(location, purpose="run", settle_s=0, clock=FakeClock(NOW)).acquire()
    assert not location.exists()


def test_remote_store_a_competitor_whose_write_lands_during_the_settle_wins(
    remote: tuple[RemoteFilesystem, Location],
) -> None:
    filesystem, location = remote
    competitor = _record(pid=4242, host="elsewhere", heartbeat_at_ms=NOW, token="competitor")
    filesystem.after_write = lambda: filesystem.put(REMOTE_PATH, competitor.to_json())
    lock = RunLock(location, purpose="run", settle_s=0, clock=FakeClock(NOW))
    with pytest.raises(RunLockHeldError, match="another process took the run lock at the same"):
        lock.acquire()
    assert not lock.held
    assert filesystem.get(REMOTE_PATH) == competitor


def test_remote_heartbeat_failures_are_logged_and_retried(
    remote: tuple[RemoteFilesystem, Location], caplog: pytest.LogCaptureFixture
) -> None:
    filesystem, location = remote
    clock = FakeClock(NOW)
    with RunLock(
        location, purpose="run", heartbeat_interval_s=0.01, lease_s=1.0, settle_s=0, clock=clock
    ) as lock:
        filesystem.down = True
        clock.now_ms = NOW + 3_000
        waiting.wait_until(
            lambda: _messages(caplog, logging.WARNING),
            timeout=10,
            interval=0.005,
            message="no heartbeat failure logged",
        )
        warning = _messages(caplog, logging.WARNING)[0]
        assert warning == (
            f"run lock s3a://{REMOTE_PATH}: heartbeat failed (cannot look at "
            f"s3a://{REMOTE_PATH}: store unreachable); last good heartbeat 3 s ago, others "
            "may take the lock over once the lease of 1 s has passed"
        )
        filesystem.down = False
        waiting.wait_until(
            lambda: filesystem.get(REMOTE_PATH).heartbeat_at_ms == NOW + 3_000,
            timeout=10,
            interval=0.005,
            message="the heartbeat did not resume",
        )
        assert not lock.lost
    assert not location.exists()


def test_a_lock_deleted_under_a_holder_sets_lost(
    remote: tuple[RemoteFilesystem, Location],
) -> None:
    filesystem, location = remote
    with RunLock(
        location, purpose="run", heartbeat_interval_s=0.01, lease_s=1.0, settle_s=0
    ) as lock:
        filesystem.before_look = lambda: filesystem.inner.delete_file(REMOTE_PATH)
        waiting.wait_until(
            lambda: lock.lost, timeout=10, interval=0.005, message="loss not noticed"
        )
        assert lock.lost_reason == (
            f"the run lock s3a://{REMOTE_PATH} was deleted while this run held it"
        )
    assert not location.exists()


# -- other processes -------------------------------------------------------------------------------

RACERS = 8
ROUNDS = 4


def _race(
    path: str, start: Barrier, finish: Barrier, results: Any, round_over: list[Event]
) -> None:
    """One racer: in every round, try once; a winner holds until the parent has counted."""
    for round_over_event in round_over:
        start.wait()
        lock = RunLock(path, purpose="race", settle_s=0)
        try:
            lock.acquire()
        except RunLockHeldError:
            results.put(False)
        else:
            results.put(True)
            round_over_event.wait()
            lock.release()
        finish.wait()


def test_of_racing_processes_exactly_one_takes_a_free_or_stale_lock(lock_path: Path) -> None:
    start, finish = SPAWN.Barrier(RACERS + 1), SPAWN.Barrier(RACERS + 1)
    results = SPAWN.Queue()
    round_over = [SPAWN.Event() for _ in range(ROUNDS)]
    racers = [
        SPAWN.Process(target=_race, args=(str(lock_path), start, finish, results, round_over))
        for _ in range(RACERS)
    ]
    for racer in racers:
        racer.start()
    try:
        for round_number in range(ROUNDS):
            if round_number % 2:
                # A dead holder elsewhere: everyone judges it stale at once.
                _plant(lock_path, _record(pid=1, host="gone", heartbeat_at_ms=0).to_json())
            start.wait(timeout=60)
            outcomes = [results.get(timeout=30) for _ in range(RACERS)]
            assert outcomes.count(True) == 1, f"round {round_number}: {outcomes}"
            assert _holder(lock_path).purpose == "race"
            round_over[round_number].set()
            finish.wait(timeout=30)
            assert not lock_path.exists()
    except BaseException:
        # Free the racers at once: winners wait for the round's end, the others at barriers.
        for event in round_over:
            event.set()
        start.abort()
        finish.abort()
        raise
    finally:
        for racer in racers:
            racer.join(timeout=30)
            if racer.is_alive():
                racer.kill()
                racer.join()
    assert [racer.exitcode for racer in racers] == [0] * RACERS


def _hold_forever(path: str, ready: Event) -> None:
    lock = RunLock(path, purpose="run", heartbeat_interval_s=0.05, lease_s=60)
    lock.acquire()
    ready.set()
    threading.Event().wait()


def test_a_holder_killed_with_sigkill_is_taken_over(
    lock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ready = SPAWN.Event()
    holder = SPAWN.Process(target=_hold_forever, args=(str(lock_path), ready))
    holder.start()
    try:
        assert ready.wait(timeout=60), "the holder never took the lock"
        with pytest.raises(RunLockHeldError, match=f"pid {holder.pid} on host {HOST}"):
            RunLock(str(lock_path), purpose="run").acquire()
    finally:
        holder.kill()  # SIGKILL: no release, no cleanup of any kind
        holder.join(timeout=30)
    assert holder.exitcode == -9
    assert _holder(lock_path).pid == holder.pid

    with RunLock(str(lock_path), purpose="run") as lock:
        assert _holder(lock_path).token == lock.token
    [warning] = _messages(caplog, logging.WARNING)
    assert warning.endswith(f"pid {holder.pid} is no longer running")
