"""The single-writer guard of a generation: one ``run`` (or ``upgrade apply``) at a time.

Two drivers writing the same checkpoint corrupt it, so whatever writes a generation holds
its ``run.lock`` (see ``layout``) for as long as it writes. The lock is a small JSON file on
the checkpoint's own filesystem, which may be local or remote (s3a, hdfs, abfs, gs), and
the holders may be on different machines::

    {"format": 1, "token": "<uuid>", "purpose": "run", "host": "worker-3",
     "host_id": "<boot id>/<pid namespace>", "pid": 4242, "process_start": "<ticks>",
     "acquired_at_ms": ..., "heartbeat_at_ms": ..., "lease_ms": 60000}

While held, a daemon thread rewrites ``heartbeat_at_ms`` every ``heartbeat_interval_s``.
Releasing deletes the file only if it still carries our token.

When is a holder dead (the lock *stale*) rather than busy?

1. On this machine (same host name, same boot, same pid namespace) the process table
   decides: the pid no longer runs (or is a zombie), or it runs but started at another
   time (the pid was reused) -> stale. If the very process is still running, the lock is
   held even when its heartbeat is overdue: that process is hung (or suspended with Ctrl-Z),
   not dead, and would resume writing if we took over; the message says to stop it. The
   exception is a lock of this process itself with an overdue heartbeat: no RunLock of
   ours heartbeats it any more (its release failed), so it is stale.
2. Otherwise (another machine, or a pid whose start time cannot be read) the heartbeat
   decides: older than the holder's own lease -> stale. Heartbeats are wall-clock times
   written by the holder and judged by the taker, so the lease must exceed the clock skew
   between the machines (NTP keeps it far below the 60 s default).
3. A file that cannot be read as a lock (empty or cut short by a writer that died on a
   store without atomic writes, or edited by hand) is refused until the lease has passed
   since its modification time: it may be a live writer's half-written file.

Mutual exclusion:

- Local filesystems (including NFS mounts, which propagate ``flock`` to the server): every
  read-decide-write of the lock file (acquire, heartbeat, release) runs under an exclusive
  ``flock`` on a guard file ``.run.lock.guard`` beside it, and the lock file is replaced
  atomically (write, then rename). Of any number of processes racing for a free or stale
  lock exactly one wins. The guard file is deleted at the end of each critical section while
  still locked; a process that was waiting on the deleted inode notices and retries, so no
  guard file is left behind.
- Remote stores offer no exclusive create through pyarrow, so acquiring there writes the
  lock, waits ``settle_s`` and reads it back: only a process that still finds its own token
  has the lock. Residual race: if a competitor read the lock (finding it free or stale)
  before our write, and its own write lands only after our read-back, because its read and
  write were more than ``settle_s`` apart (a stalled process, a very slow store), both
  processes believe they hold it. The file then names the later writer; the earlier one
  finds a foreign token at its next heartbeat and sets ``lost``, which the run loop polls to
  stop. The window is thus at most one heartbeat interval, and only under that stall. The
  same read-then-write gap exists for heartbeats, with the same outcome.

The heartbeat thread never ends the process: a failed heartbeat (the store is down) is
logged and retried; finding another token, or no file, sets ``lost``.

On a local filesystem the directories the lock had to create for its file are removed
again, while empty, when it is released or refused: a refused command leaves no trace.
Remote stores are left as they are: object stores have no directories, and on HDFS-like
stores an empty generation directory holds no commit, which is all that planning checks.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import posixpath
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from types import TracebackType

import pyarrow.fs

from pyspark_kafka_upgrade._adapters.storage.filesystem import Location, StorageError, open_location
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
# The local critical section takes milliseconds; only a stopped (SIGSTOP) or hung process can
# hold the guard this long, and then it is better to fail with a message than to wait forever.
_GUARD_TIMEOUT_S = 10.0
# How long release waits for a heartbeat in flight (a slow store) before giving up on deleting.
_RELEASE_WAIT_S = 30.0


class RunLockError(PipelineError):
    """The run lock could not be taken; the message says why and what to do."""


class RunLockHeldError(RunLockError):
    """Another run or upgrade holds the generation's lock."""

    # EX_TEMPFAIL from sysexits.h: scripts and schedulers can tell "busy, retry later" apart.
    exit_code = 75


class ProcessState(Enum):
    """What this machine's process table says about a lock holder's pid."""

    GONE = "gone"  # no such process, or a zombie: it exited
    REUSED = "reused"  # the pid runs, but started at another time: another program
    RUNNING = "running"  # the pid runs and started when the holder did: the holder itself
    UNKNOWN = "unknown"  # the pid runs; whether it is the holder cannot be told (no /proc)


def host_identity() -> str | None:
    """This kernel's boot id and this process's pid namespace, or None where unknown.

    Host names alone do not say that a pid is comparable: containers on one machine may share
    a host name but not their pids, and a rebooted machine keeps its name but not its
    processes. Only a holder with the same host name *and* identity is checked by pid.
    """
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        pid_namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return f"{boot_id}/{pid_namespace}"


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """The state letter and start time (clock ticks after boot) of ``pid``, from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself contain ") ", so split
    # after the last one: what follows is field 3 (state) onwards, starttime being field 22.
    fields = stat.rpartition(b")")[2].split()
    if len(fields) < 20:
        return None
    return fields[0].decode("ascii", "replace"), fields[19].decode("ascii", "replace")


def process_start_marker(pid: int) -> str | None:
    """When ``pid`` started, as an opaque string, or None without /proc or such a process."""
    stat = _proc_stat(pid)
    return None if stat is None else stat[1]


def inspect_process(pid: int, start: str | None) -> ProcessState:
    """Whether the process ``pid`` that started at ``start`` (None: unknown) still runs here."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return ProcessState.GONE
    except OSError:
        pass  # PermissionError: it exists but belongs to another user
    stat = _proc_stat(pid)
    if stat is None:
        # With /proc mounted, a missing entry means it exited since the kill() above.
        return ProcessState.GONE if Path("/proc/self/stat").exists() else ProcessState.UNKNOWN
    state, current_start = stat
    if state == "Z":
        return ProcessState.GONE  # exited; only its parent has not collected the status yet
    if start is None:
        return ProcessState.UNKNOWN
    return ProcessState.RUNNING if current_start == start else ProcessState.REUSED


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
            f"since {_format_time(self.acquired_at_ms)}, "
            f"last heartbeat {_format_age(now_ms - self.heartbeat_at_ms)} ago)"
        )


def _format_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _format_age(ms: int) -> str:
    return f"{max(ms, 0) / 1000:.0f} s"


@dataclass(frozen=True)
class _Observed:
    """A lock file as found: its record, or why it has none, and when it was last modified."""

    record: LockRecord | None
    problem: str | None
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
        self._local = getattr(location.filesystem, "type_name", None) == "local"
        self._purpose = purpose
        self._interval_s = heartbeat_interval_s
        self._lease_ms = round(lease_s * 1000)
        self._settle_s = settle_s
        self._clock = clock
        self._host = socket.gethostname() if host is None else host
        self._host_id = host_identity()
        self._pid = os.getpid() if pid is None else pid
        self._process_state = process_state
        self._token = uuid.uuid4().hex
        self._record: LockRecord | None = None
        self._stopping = threading.Event()
        self._lost = threading.Event()
        self._lost_reason: str | None = None
        self._thread: threading.Thread | None = None
        self._last_heartbeat_ok_ms = 0
        # Directories this lock had to create for its file, deepest first: removed again
        # (when empty) on a refusal and on release, so a refused command leaves no trace.
        self._created_directories: list[str] = []

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
            self._remove_created_directories()
            raise

    def _take(self) -> None:
        try:
            with self._exclusive(record_created=True):
                now = self._clock()
                takeover = self._judge(self._observe(), now)
                record = LockRecord(
                    token=self._token,
                    purpose=self._purpose,
                    host=self._host,
                    host_id=self._host_id,
                    pid=self._pid,
                    process_start=process_start_marker(self._pid),
                    acquired_at_ms=now,
                    heartbeat_at_ms=now,
                    lease_ms=self._lease_ms,
                )
                self._location.write_atomically(record.to_json())
            if not self._local:
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
        record = observed.record
        if record is None:
            return self._judge_unreadable(observed, now)
        overdue = now - record.heartbeat_at_ms > record.lease_ms
        if self._is_this_machine(record):
            state = self._process_state(record.pid, record.process_start)
            if state is ProcessState.GONE:
                return f"{record.describe(now)}: pid {record.pid} is no longer running"
            if state is ProcessState.REUSED:
                return (
                    f"{record.describe(now)}: pid {record.pid} now belongs to another "
                    "process (its start time differs)"
                )
            if state is ProcessState.RUNNING:
                if overdue and record.pid == self._pid:
                    # This very process, and none of its RunLocks heartbeats it: one whose
                    # release failed left it behind.
                    return f"{record.describe(now)}: left behind by this process"
                raise RunLockHeldError(self._held_message(record, now, hung=overdue))
        if overdue:
            return (
                f"{record.describe(now)}: its lease of {_format_age(record.lease_ms)} has expired"
            )
        raise RunLockHeldError(self._held_message(record, now, hung=False))

    def _judge_unreadable(self, observed: _Observed, now: int) -> str:
        if observed.modified_ms is None:
            raise RunLockHeldError(
                f"the run lock {self.uri} is not a readable lock ({observed.problem}) and its "
                "store gives no modification time. If no run or upgrade uses this "
                "generation, delete the file and try again."
            )
        age_ms = now - observed.modified_ms
        if age_ms > self._lease_ms:
            return (
                f"an unreadable lock file ({observed.problem}), last modified "
                f"{_format_age(age_ms)} ago"
            )
        raise RunLockHeldError(
            f"the run lock {self.uri} is not a readable lock ({observed.problem}); it was "
            f"modified {_format_age(age_ms)} ago, so a run may be writing it right now. If "
            f"no run or upgrade uses this generation, it counts as abandoned "
            f"{_format_age(self._lease_ms)} after that (in "
            f"{_format_age(self._lease_ms - age_ms)}): try again then."
        )

    def _held_message(self, record: LockRecord, now: int, *, hung: bool) -> str:
        holder = f"the generation is in use: {self.uri} is held by {record.describe(now)}."
        if hung:
            return (
                f"{holder} That process still runs on this host but has stopped "
                f"heartbeating, so it is probably hung: stop it (kill {record.pid}, or "
                f"kill -9 {record.pid} if SIGTERM does not end it) and try again."
            )
        remaining = record.heartbeat_at_ms + record.lease_ms - now
        return (
            f"{holder} Stop that run first: SIGTERM (Ctrl-C) lets its current batch finish. "
            f"If its machine is gone, the lock counts as abandoned once its lease of "
            f"{_format_age(record.lease_ms)} has passed since its last heartbeat (in "
            f"{_format_age(remaining)}): try again then."
        )

    def _is_this_machine(self, record: LockRecord) -> bool:
        return record.host == self._host and record.host_id == self._host_id

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
                f"{self._held_message(observed.record, now, hung=False)}"
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
                    _format_age(since_ms),
                    _format_age(self._lease_ms),
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
            self._remove_created_directories()

    def _remove_created_directories(self) -> None:
        """Remove the directories this lock created, deepest first, while they are empty.

        A directory that holds anything (a checkpoint, another process's lock) stays.
        """
        created, self._created_directories = self._created_directories, []
        for directory in created:
            try:
                os.rmdir(directory)
            except OSError:
                return

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
            return _Observed(LockRecord.from_json(content), None, modified_ms)
        except ValueError as problem:
            return _Observed(None, str(problem), modified_ms)

    @contextlib.contextmanager
    def _exclusive(self, *, record_created: bool = False) -> Iterator[None]:
        """On a local filesystem, exclude every other process's read-decide-write of the lock.

        Remote stores have no such primitive; there this is a no-op (see the module doc).
        """
        if not self._local:
            yield
            return
        directory, name = posixpath.split(self._location.path)
        guard = posixpath.join(directory, f".{name}.guard")
        deadline = time.monotonic() + _GUARD_TIMEOUT_S
        try:
            while True:
                missing = _missing_directories(directory)
                os.makedirs(directory, exist_ok=True)
                if record_created and missing:
                    self._created_directories = missing
                try:
                    fd = _lock_guard(guard, deadline)
                    break
                except FileNotFoundError:
                    # Another lock removed the directory it had created, between our
                    # makedirs and open: create it again.
                    if time.monotonic() >= deadline:
                        raise TimeoutError from None
        except TimeoutError:
            raise RunLockError(
                f"another process has been changing the run lock {self.uri} for "
                f"{_GUARD_TIMEOUT_S:.0f} s (it holds {guard}); it may be stopped or hung"
            ) from None
        except OSError as error:
            raise StorageError(f"cannot lock {guard}: {error}") from None
        try:
            yield
        finally:
            # Deleted while still locked: whoever waits on this inode finds it replaced
            # after locking and retries, so exclusion holds and nothing is left behind.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(guard)
            os.close(fd)


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


def _lock_guard(path: str, deadline: float) -> int:
    """An open, flock'ed descriptor of the file now at ``path``, created if need be."""
    pause = 0.001
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TimeoutError from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.05)
            held = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_dev, current.st_ino) == (
                held.st_dev,
                held.st_ino,
            ):
                return fd
        except BaseException:
            os.close(fd)
            raise
        # The holder we waited for deleted the guard: lock the file at ``path`` now instead.
        os.close(fd)
