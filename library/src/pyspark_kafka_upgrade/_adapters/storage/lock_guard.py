"""The local critical section of a run lock: one read-decide-write of its file at a time.

On a local filesystem (NFS mounts included: their client passes ``flock`` to the server)
every acquire, heartbeat and release of a run lock runs under an exclusive ``flock`` of a
guard file beside it, ``.run.lock.guard``, and the lock file is replaced atomically (write,
then rename): of any number of processes racing for a free or stale lock exactly one wins.
portalocker's TemporaryFileLock holds the guard: it deletes the file while still holding it,
and after locking checks that the file it locked is still the one at the path, so a process
that waited on a deleted file retries on the new one, and no guard file is left behind.
Not filelock: on Unix it keeps its lock file after release, by design.

Remote stores have no such primitive; the run lock's module doc says what it does there.
Nor does it create or remove directories there: object stores have none, and on HDFS-like
stores an empty generation directory holds no commit, which is all that planning checks.
"""

from __future__ import annotations

import os
import posixpath
import time

import portalocker

from pyspark_kafka_upgrade._adapters.storage.filesystem import StorageError

# The critical section takes milliseconds; only a stopped (SIGSTOP) or hung process can hold
# the guard this long, and then it is better to fail with a message than to wait forever.
GUARD_TIMEOUT_S = 10.0
# How often a waiting process tries again: a holder is done within milliseconds.
_POLL_S = 0.005


class LockGuardError(Exception):
    """Another process has held the guard for the whole timeout: it may be stopped or hung."""


class LockGuard:
    """The guard of the lock file at ``lock_path``, a local path; taken and released in turn."""

    def __init__(self, lock_path: str, *, timeout_s: float = GUARD_TIMEOUT_S) -> None:
        self._directory, name = posixpath.split(lock_path)
        self.path = posixpath.join(self._directory, f".{name}.guard")
        self.timeout_s = timeout_s
        # Directories an acquire had to create and was asked to remember, deepest first.
        self._made: list[str] = []
        self._lock = portalocker.TemporaryFileLock(
            self.path, fail_when_locked=False, check_interval=_POLL_S
        )

    def acquire(self, *, remember_directories: bool = False) -> None:
        """Take the guard, creating its directory if need be; ``remember_directories``: for
        :meth:`remove_directories`, even when the guard is not taken.

        Raises LockGuardError after the timeout, StorageError when the guard cannot be locked.
        """
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                missing = _missing_directories(self._directory)
                os.makedirs(self._directory, exist_ok=True)
                if remember_directories and missing:
                    self._made = missing
                self._lock.acquire(timeout=max(deadline - time.monotonic(), 0.0))
                return
            except FileNotFoundError:
                # Another lock removed the directory it had created, between our makedirs
                # and open: create it again.
                if time.monotonic() >= deadline:
                    raise LockGuardError(self._busy()) from None
            except portalocker.AlreadyLocked:
                raise LockGuardError(self._busy()) from None
            except (portalocker.LockException, OSError) as error:
                raise StorageError(f"cannot lock {self.path}: {error}") from None

    def release(self) -> None:
        """Delete the guard file, then unlock it: whoever waits on it retries on a new one."""
        self._lock.release()

    def remove_directories(self) -> None:
        """Remove the directories remembered, deepest first, while they are empty: a refused
        or finished command leaves no trace. One that holds anything (a checkpoint, another
        process's lock) stays.
        """
        made, self._made = self._made, []
        for directory in made:
            try:
                os.rmdir(directory)
            except OSError:
                return

    def _busy(self) -> str:
        return f"{self.path} has been held for {self.timeout_s:.0f} s"


def _missing_directories(directory: str) -> list[str]:
    """``directory`` and its ancestors that do not exist yet, deepest first."""
    missing: list[str] = []
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        parent = posixpath.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return missing
