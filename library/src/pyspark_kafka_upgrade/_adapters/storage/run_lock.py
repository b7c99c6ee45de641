"""The single-writer guard of a generation: one ``run`` (or ``upgrade apply``) at a time.

Two drivers writing the same checkpoint corrupt it, so whatever writes a generation holds
its ``run.lock`` (see ``layout``) for as long as it writes. The lock is a small JSON file on
the checkpoint's own filesystem, which may be local or remote (s3a, hdfs, abfs, gs), and
the holders may be on different machines::

    {"format": 1, "token": "<uuid>", "purpose": "run", "host": "worker-3",
     "host_id": "<boot id>/<pid namespace>", "pid": 4242, "process_start": "<ticks>",
     "acquired_at_ms": ..., "heartbeat_at_ms": ..., "lease_ms": 60000}

A file beside the checkpoint, not a PostgreSQL advisory lock or a lease in the ledger: only
the postgres store has such a thing, and every checkpoint needs its guard, whatever the store.

While held, a daemon thread rewrites ``heartbeat_at_ms`` every ``heartbeat_interval_s``. It
never ends the process: a failed heartbeat (the store is down) is logged and retried; finding
another token, or no file, sets ``lost``. Releasing deletes the file only if it is still ours.

When a holder is dead (the lock *stale*) rather than busy is ``lock_staleness``'s to say:
on this machine the process table decides, elsewhere the heartbeat and the lease.

Mutual exclusion:

- Local filesystems: every read-decide-write of the lock file runs under ``lock_guard``, a
  ``flock`` beside it, and the lock file is replaced atomically: of any number of
  processes racing for a free or stale lock exactly one wins. The directories the lock had
  to create go again, while empty, on release or refusal: a refused command leaves no trace.
- Remote stores offer no exclusive create through pyarrow, so acquiring there writes the
  lock, waits ``settle_s`` and reads it back: only a process that still finds its own token
  has the lock. Residual race: if a competitor read the lock (finding it free or stale)
  before our write, and its own write lands only after our read-back, because its read and
  write were more than ``settle_s`` apart (a stalled process, a very slow store), both
  processes believe they hold it. The file then names the later writer; the earlier one
  finds a foreign token at its next heartbeat and sets ``lost``, which the run loop polls to
  stop. The window is thus at most one heartbeat interval, and only under that stall. The
  same read-then-write gap exists for heartbeats, with the same outcome.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from types import TracebackType

import pyarrow.fs

from pyspark_kafka_upgrade._adapters.storage.filesystem import Location, StorageError, open_location
from pyspark_kafka_upgrade._adapters.storage.lock_guard import LockGuard, LockGuardError
from pyspark_kafka_upgrade._adapters.storage.lock_staleness import (
    Taker,
    format_age,
    format_time,
    held_message,
    judge_holder,
    judge_unreadable,
)
from pyspark_kafka_upgrade._adapters.storage.process_table import (
    ProcessState,
    host_identity,
    inspect_process,
    process_start_marker,
)
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.values.clock import now_ms
from pyspark_kafka_upgrade._domain.values.json_record import Field, Shape, decode, encode

log = logging.getLogger(__name__)

LOCK_FORMAT = 1
DEFAULT_HEARTBEAT_INTERVAL_S = 10.0
DEFAULT_LEASE_S = 60.0
# Long enough for a competitor's read and write of a few hundred bytes to both land on any
# store we know, short enough not to be noticed at startup.
DEFAULT_SETTLE_S = 2.0
# How long release waits for a heartbeat in flight (a slow store) before giving up on deleting.
_RELEASE_WAIT_S = 30.0


class RunLockError(PipelineError):
    """The run lock could not be taken; the message says why and what to do."""


class RunLockHeldError(RunLockError):
    """Another run or upgrade holds the generation's lock."""

    # EX_TEMPFAIL from sysexits.h: scripts and schedulers can tell "busy, retry later" apart.
    exit_code = 75


class _UnreadableLockError(PipelineError, ValueError):
    """A lock file whose fields are not a lock's: read as a file that is not a lock."""


@dataclass(frozen=True)
class LockRecord:
    """The content of a lock file."""

    # host_id and process_start may be unknown; older files left them out then.
    json_shape = Shape(
        "token",
        "purpose",
        "host",
        Field("host_id", absent=None),
        "pid",
        Field("process_start", absent=None),
        "acquired_at_ms",
        "heartbeat_at_ms",
        "lease_ms",
        what="lock file",
        error=_UnreadableLockError,
    )

    token: str
    purpose: str
    host: str
    host_id: str | None
    pid: int
    process_start: str | None
    acquired_at_ms: int
    heartbeat_at_ms: int
    lease_ms: int

    def to_json(self) -> bytes:
        document = {"format": LOCK_FORMAT, **encode(self)}
        return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, content: bytes) -> LockRecord:
        """Parse a lock file; ValueError says what is wrong with it."""
        if not content.strip():
            raise ValueError("the file is empty")
        try:
            document = json.loads(content)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"not valid JSON: {error}") from None
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        if document.get("format") != LOCK_FORMAT:
            raise ValueError(f"unknown format {document.get('format')!r}")
        record = decode(cls, document)
        # A pid of 0 or below would make kill() signal whole process groups.
        if not record.token or record.pid <= 0 or record.lease_ms <= 0:
            raise ValueError("empty token, or a pid or lease that is not positive")
        return record

    def describe(self, now_ms: int) -> str:
        return (
            f"{self.purpose!r} (pid {self.pid} on host {self.host}, "
            f"since {format_time(self.acquired_at_ms)}, "
            f"last heartbeat {format_age(now_ms - self.heartbeat_at_ms)} ago)"
        )


@dataclass(frozen=True)
class _Observed:
    """A lock file as found: its record, or why it has none, and when it was last modified."""

    record: LockRecord | None
    problem: str  # "" with a record
    modified_ms: int | None


class RunLock:
    """Hold a generation's run lock for the duration of a ``with`` block.

    ``with RunLock(layout.run_lock, purpose="run") as lock:`` raises ``RunLockHeldError`` when
    a live process holds it, takes it over (with one warning) from a dead one, and releases it
    on exit. Poll ``lock.lost`` in long loops: it turns True when another process took the lock
    (after our heartbeats failed for a whole lease) or the file vanished.

    ``clock`` (wall-clock epoch ms), ``host``, ``pid`` and ``process_state`` are injectable
    for tests. ``lease_s`` must be at least twice ``heartbeat_interval_s`` so that one late
    heartbeat does not make a healthy holder look dead.
    """

    def __init__(
        self,
        location: str | Location,
        *,
        purpose: str,
        heartbeat_interval_s: float = DEFAULT_HEARTBEAT_INTERVAL_S,
        lease_s: float = DEFAULT_LEASE_S,
        settle_s: float = DEFAULT_SETTLE_S,
        clock: Callable[[], int] = now_ms,
        host: str | None = None,
        pid: int | None = None,
        process_state: Callable[[int, str | None], ProcessState] = inspect_process,
    ) -> None:
        if heartbeat_interval_s <= 0:
            raise ValueError(f"heartbeat_interval_s must be > 0, got {heartbeat_interval_s}")
        if lease_s < 2 * heartbeat_interval_s:
            raise ValueError(
                f"lease_s ({lease_s}) must be at least twice heartbeat_interval_s "
                f"({heartbeat_interval_s})"
            )
        if settle_s < 0:
            raise ValueError(f"settle_s must be >= 0, got {settle_s}")
        if isinstance(location, str):
            try:
                location = open_location(location)
            except StorageError as error:
                raise RunLockError(f"cannot open the run lock: {error}") from None
        self._location = location
        # Local filesystems exclude each read-decide-write of the lock with a guard beside it.
        local = getattr(location.filesystem, "type_name", None) == "local"
        self._guard = LockGuard(location.path) if local else None
        self._purpose = purpose
        self._interval_s = heartbeat_interval_s
        self._lease_ms = round(lease_s * 1000)
        self._settle_s = settle_s
        self._clock = clock
        self._taker = Taker(
            host=socket.gethostname() if host is None else host,
            host_id=host_identity(),
            pid=os.getpid() if pid is None else pid,
            lease_ms=self._lease_ms,
        )
        self._process_state = process_state
        self._token = uuid.uuid4().hex
        self._record: LockRecord | None = None
        self._stopping = threading.Event()
        self._lost = threading.Event()
        self._lost_reason: str | None = None
        self._thread: threading.Thread | None = None
        self._last_heartbeat_ok_ms = 0

    @property
    def uri(self) -> str:
        return self._location.uri

    @property
    def token(self) -> str:
        return self._token

    @property
    def held(self) -> bool:
        return self._record is not None

    @property
    def lost(self) -> bool:
        """True once the lock was found to name another holder, or to be gone, while held."""
        return self._lost.is_set()

    @property
    def lost_reason(self) -> str | None:
        return self._lost_reason

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    # -- acquiring -------------------------------------------------------------------------

    def acquire(self) -> None:
        """Take the lock or raise ``RunLockHeldError``; start heartbeating."""
        if self._record is not None:
            raise RuntimeError(f"{self.uri} is already held by this RunLock")
        try:
            self._take()
        except BaseException:
            self._remove_directories()
            raise

    def _take(self) -> None:
        try:
            with self._exclusive(remember_directories=True):
                now = self._clock()
                takeover = self._judge(self._observe(), now)
                record = LockRecord(
                    token=self._token,
                    purpose=self._purpose,
                    host=self._taker.host,
                    host_id=self._taker.host_id,
                    pid=self._taker.pid,
                    process_start=process_start_marker(self._taker.pid),
                    acquired_at_ms=now,
                    heartbeat_at_ms=now,
                    lease_ms=self._lease_ms,
                )
                self._location.write_atomically(record.to_json())
            if self._guard is None:
                self._confirm_remote_write()
        except StorageError as error:
            raise RunLockError(f"cannot take the run lock: {error}") from None
        self._record = record
        self._last_heartbeat_ok_ms = record.heartbeat_at_ms
        if takeover is not None:
            # Logged only once the lock is ours: a process that lost the race stays quiet.
            log.warning("took over the run lock %s from a dead holder: %s", self.uri, takeover)
        self._stopping.clear()
        self._lost.clear()
        self._lost_reason = None
        self._thread = threading.Thread(
            target=self._heartbeat_loop, name=f"run-lock-heartbeat {self.uri}", daemon=True
        )
        self._thread.start()

    def _judge(self, observed: _Observed | None, now: int) -> str | None:
        """None for a free lock, why the holder is dead for a stale one; raise if held."""
        if observed is None:
            return None
        if observed.record is None:
            verdict = judge_unreadable(
                observed.problem, observed.modified_ms, now, uri=self.uri, lease_ms=self._lease_ms
            )
        else:
            verdict = judge_holder(
                observed.record,
                now,
                uri=self.uri,
                taker=self._taker,
                process_state=self._process_state,
            )
        if not verdict.dead:
            raise RunLockHeldError(verdict.reason)
        return verdict.reason

    def _confirm_remote_write(self) -> None:
        # No exclusive create on remote stores: wait for any competitor that read the same
        # state as we did to land its write, then see whose token survived.
        time.sleep(self._settle_s)
        observed = self._observe()
        if observed is not None and observed.record is not None:
            if observed.record.token == self._token:
                return
            now = self._clock()
            raise RunLockHeldError(
                f"another process took the run lock at the same moment: "
                f"{held_message(self.uri, observed.record, now, hung=False)}"
            )
        raise RunLockHeldError(
            f"the run lock {self.uri} changed while we took it (it is now "
            f"{'gone' if observed is None else 'unreadable'}): another process is taking "
            "it; try again."
        )

    # -- heartbeat and release ---------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        while not self._stopping.wait(self._interval_s):
            try:
                self._beat()
            except Exception as error:  # keep beating: a store outage may be brief
                since_ms = self._clock() - self._last_heartbeat_ok_ms
                log.warning(
                    "run lock %s: heartbeat failed (%s); last good heartbeat %s ago, others "
                    "may take the lock over once the lease of %s has passed",
                    self.uri,
                    error,
                    format_age(since_ms),
                    format_age(self._lease_ms),
                )
            if self._lost.is_set():
                return

    def _beat(self) -> None:
        with self._exclusive():
            # Release sets this before it waits for the thread: no heartbeat may follow it.
            if self._stopping.is_set() or self._record is None:
                return
            observed = self._observe()
            if observed is None:
                self._mark_lost(f"the run lock {self.uri} was deleted while this run held it")
                return
            if observed.record is None or observed.record.token != self._token:
                now = self._clock()
                holder = (
                    f"an unreadable file ({observed.problem})"
                    if observed.record is None
                    else observed.record.describe(now)
                )
                self._mark_lost(f"the run lock {self.uri} was taken over by {holder}")
                return
            record = replace(self._record, heartbeat_at_ms=self._clock())
            self._location.write_atomically(record.to_json())
            self._record = record
            self._last_heartbeat_ok_ms = record.heartbeat_at_ms

    def _mark_lost(self, reason: str) -> None:
        self._lost_reason = reason
        self._lost.set()
        log.error("%s; this run no longer has exclusive use of its generation", reason)

    def release(self) -> None:
        """Stop heartbeating and delete the lock file if it is still ours.

        Never raises for storage trouble: release runs on the way out, often after another
        error, and a lock left behind goes stale on its own.
        """
        if self._record is None:
            return
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            # Only once the thread has ended can no heartbeat write the file after we delete it.
            thread.join(_RELEASE_WAIT_S)
            if thread.is_alive():
                self._record = None
                log.warning(
                    "run lock %s: a heartbeat has been stuck for %.0f s; the lock is left in "
                    "place and goes stale once this process has exited",
                    self.uri,
                    _RELEASE_WAIT_S,
                )
                return
        try:
            with self._exclusive():
                observed = self._observe()
                if observed is not None and observed.record is not None:
                    if observed.record.token == self._token:
                        self._location.delete_file()
                    else:
                        log.warning(
                            "run lock %s now belongs to %s; left in place",
                            self.uri,
                            observed.record.describe(self._clock()),
                        )
                elif observed is not None:
                    log.warning(
                        "run lock %s is unreadable (%s); left in place", self.uri, observed.problem
                    )
        except (StorageError, RunLockError) as error:
            log.warning(
                "could not release the run lock %s (%s); it goes stale once this process "
                "has exited",
                self.uri,
                error,
            )
        finally:
            self._record = None
            self._remove_directories()

    def _remove_directories(self) -> None:
        if self._guard is not None:
            self._guard.remove_directories()

    # -- the file ------------------------------------------------------------------------------

    def _observe(self) -> _Observed | None:
        """The lock file as it is now, or None when there is none."""
        info = self._location.info()
        if info.type == pyarrow.fs.FileType.NotFound:
            return None
        mtime_ns = info.mtime_ns
        modified_ms = None if mtime_ns is None else int(mtime_ns) // 1_000_000
        try:
            content = self._location.read_bytes()
        except StorageError:
            if not self._location.exists():
                return None  # released between the two calls
            raise
        try:
            return _Observed(LockRecord.from_json(content), "", modified_ms)
        except ValueError as problem:
            return _Observed(None, str(problem), modified_ms)

    @contextlib.contextmanager
    def _exclusive(self, *, remember_directories: bool = False) -> Iterator[None]:
        """On a local filesystem, exclude every other process's read-decide-write of the lock.

        Remote stores have no such primitive; there this is a no-op (see the module doc).
        """
        if self._guard is None:
            yield
            return
        try:
            self._guard.acquire(remember_directories=remember_directories)
        except LockGuardError:
            raise RunLockError(
                f"another process has been changing the run lock {self.uri} for "
                f"{self._guard.timeout_s:.0f} s (it holds {self._guard.path}); it may be "
                "stopped or hung"
            ) from None
        try:
            yield
        finally:
            self._guard.release()
