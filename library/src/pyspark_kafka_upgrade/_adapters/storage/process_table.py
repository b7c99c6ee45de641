"""What this machine's process table says about a run lock's holder: is that process alive?

A lock records its holder's pid and when that process started, in clock ticks after boot
(field 22 of ``/proc/<pid>/stat``), so that a pid the kernel has given to another program
since does not pass for the holder. psutil does not fit here: it gives a start time only as
epoch seconds derived from the boot time, which clock adjustments move, while the lock file
keeps the kernel's ticks, and a holder judged on another scale would look like another
process.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path


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
