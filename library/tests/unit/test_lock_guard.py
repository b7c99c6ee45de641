"""The run lock's local critical section: exclusive, bounded, and leaving nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_kafka_upgrade._adapters.storage.lock_guard import LockGuard, LockGuardError


@pytest.fixture
def lock_path(tmp_path: Path) -> Path:
    return tmp_path / "checkpoints" / "generation-1" / "run.lock"


def test_a_second_guard_waits_its_timeout_then_says_who_holds_it(lock_path: Path) -> None:
    first, second = LockGuard(str(lock_path)), LockGuard(str(lock_path), timeout_s=0.05)
    first.acquire()
    try:
        with pytest.raises(LockGuardError, match=r"\.run\.lock\.guard has been held for 0 s"):
            second.acquire()
    finally:
        first.release()
    second.acquire()
    second.release()


def test_the_guard_file_exists_only_while_held(lock_path: Path) -> None:
    guard = LockGuard(str(lock_path))
    guard.acquire()
    assert [p.name for p in lock_path.parent.iterdir()] == [".run.lock.guard"]
    guard.release()
    assert list(lock_path.parent.iterdir()) == []


def test_remembered_directories_are_removed_while_empty(lock_path: Path) -> None:
    guard = LockGuard(str(lock_path))
    guard.acquire(remember_directories=True)
    guard.release()
    guard.remove_directories()
    assert not lock_path.parent.parent.exists()


def test_a_directory_that_holds_anything_stays(lock_path: Path) -> None:
    guard = LockGuard(str(lock_path))
    guard.acquire(remember_directories=True)
    guard.release()
    (lock_path.parent / "aggregates").mkdir()
    guard.remove_directories()
    assert [p.name for p in lock_path.parent.iterdir()] == ["aggregates"]


def test_directories_not_remembered_are_kept(lock_path: Path) -> None:
    guard = LockGuard(str(lock_path))
    guard.acquire()
    guard.release()
    guard.remove_directories()
    assert lock_path.parent.is_dir()
