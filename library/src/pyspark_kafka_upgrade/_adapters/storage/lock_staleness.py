"""When is a run lock's holder dead (the lock *stale*) rather than busy?

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

Each judgement is a :class:`Verdict`: why the holder is dead, or what to tell whoever wants
the lock while it lives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from pyspark_kafka_upgrade._adapters.storage.process_table import ProcessState


class Holder(Protocol):
    """What the rules read of a lock file's record (``run_lock.LockRecord``)."""

    @property
    def host(self) -> str: ...
    @property
    def host_id(self) -> str | None: ...
    @property
    def pid(self) -> int: ...
    @property
    def process_start(self) -> str | None: ...
    @property
    def heartbeat_at_ms(self) -> int: ...
    @property
    def lease_ms(self) -> int: ...
    def describe(self, now_ms: int) -> str: ...


@dataclass(frozen=True)
class Taker:
    """The process that wants the lock: where it runs, and its own lease."""

    host: str
    host_id: str | None
    pid: int
    lease_ms: int

    def shares_the_process_table_of(self, holder: Holder) -> bool:
        return holder.host == self.host and holder.host_id == self.host_id


@dataclass(frozen=True)
class Verdict:
    """``dead``: the lock may be taken over, ``reason`` says why (for the log); else
    ``reason`` is what to tell the taker."""

    dead: bool
    reason: str


def judge_holder(
    holder: Holder,
    now: int,
    *,
    uri: str,
    taker: Taker,
    process_state: Callable[[int, str | None], ProcessState],
) -> Verdict:
    """Rules 1 and 2 of the module doc, for the readable lock ``uri``."""
    overdue = now - holder.heartbeat_at_ms > holder.lease_ms
    if taker.shares_the_process_table_of(holder):
        state = process_state(holder.pid, holder.process_start)
        if state is ProcessState.GONE:
            return Verdict(True, f"{holder.describe(now)}: pid {holder.pid} is no longer running")
        if state is ProcessState.REUSED:
            return Verdict(
                True,
                f"{holder.describe(now)}: pid {holder.pid} now belongs to another "
                "process (its start time differs)",
            )
        if state is ProcessState.RUNNING:
            if overdue and holder.pid == taker.pid:
                # This very process, and none of its RunLocks heartbeats it: one whose
                # release failed left it behind.
                return Verdict(True, f"{holder.describe(now)}: left behind by this process")
            return Verdict(False, held_message(uri, holder, now, hung=overdue))
    if overdue:
        return Verdict(
            True, f"{holder.describe(now)}: its lease of {format_age(holder.lease_ms)} has expired"
        )
    return Verdict(False, held_message(uri, holder, now, hung=False))


def judge_unreadable(
    problem: str, modified_ms: int | None, now: int, *, uri: str, lease_ms: int
) -> Verdict:
    """Rule 3 of the module doc: the file at ``uri`` is no lock, for ``problem``."""
    if modified_ms is None:
        return Verdict(
            False,
            f"the run lock {uri} is not a readable lock ({problem}) and its store gives no "
            "modification time. If no run or upgrade uses this generation, delete the file "
            "and try again.",
        )
    age_ms = now - modified_ms
    if age_ms > lease_ms:
        return Verdict(
            True, f"an unreadable lock file ({problem}), last modified {format_age(age_ms)} ago"
        )
    return Verdict(
        False,
        f"the run lock {uri} is not a readable lock ({problem}); it was modified "
        f"{format_age(age_ms)} ago, so a run may be writing it right now. If no run or upgrade "
        f"uses this generation, it counts as abandoned {format_age(lease_ms)} after that (in "
        f"{format_age(lease_ms - age_ms)}): try again then.",
    )


def held_message(uri: str, holder: Holder, now: int, *, hung: bool) -> str:
    """Why the lock ``uri`` cannot be taken while ``holder`` lives, and what to do."""
    in_use = f"the generation is in use: {uri} is held by {holder.describe(now)}."
    if hung:
        return (
            f"{in_use} That process still runs on this host but has stopped "
            f"heartbeating, so it is probably hung: stop it (kill {holder.pid}, or "
            f"kill -9 {holder.pid} if SIGTERM does not end it) and try again."
        )
    remaining = holder.heartbeat_at_ms + holder.lease_ms - now
    return (
        f"{in_use} Stop that run first: SIGTERM (Ctrl-C) lets its current batch finish. "
        f"If its machine is gone, the lock counts as abandoned once its lease of "
        f"{format_age(holder.lease_ms)} has passed since its last heartbeat (in "
        f"{format_age(remaining)}): try again then."
    )


def format_age(ms: int) -> str:
    """A duration in whole seconds, as the messages give it: ``"57 s"``."""
    return f"{max(ms, 0) / 1000:.0f} s"


def format_time(ms: int) -> str:
    """An epoch time as the messages give it: ``"2027-01-15 08:00:00 UTC"``."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
