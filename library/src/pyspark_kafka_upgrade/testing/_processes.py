"""Daemons a test run starts (brokers, Spark's master and worker), which never outlive it.

Each runs in a process group of its own, so a Ctrl-C at the terminal reaches only the test
run, which then stops them in order; and the kernel kills them should the test run die
without stopping them (Linux).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

# From <linux/prctl.h>: ask the kernel to send a signal when the parent dies.
_PR_SET_PDEATHSIG = 1
# Enough of a large log to hold its last lines.
_TAIL_WINDOW_BYTES = 256 * 1024


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now, all different (each socket is held until all are)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def dies_with_this_process() -> Callable[[], None] | None:
    """A ``preexec_fn`` by which the kernel SIGKILLs the child when this process dies.

    This covers what no finalizer can: the test run killed with SIGKILL, or the OOM killer.
    Linux only (prctl); elsewhere None, and only the finalizers stop the child.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        # Looked up now: between fork and exec the child should do as little as possible.
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    kill = int(signal.SIGKILL)

    def set_parent_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, kill)
        # If the parent died between fork and prctl, no signal will ever come.
        if os.getppid() != parent:
            os._exit(1)

    return set_parent_death_signal


def signal_group(process: subprocess.Popen[Any], signum: signal.Signals) -> None:
    """Signal the process group ``process`` leads (it was started with a session of its own)."""
    # Its group id is its pid; it is not reaped yet (only wait() reaps it), so that id is
    # still its own, even when the leader itself has exited.
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def stop_group(process: subprocess.Popen[Any], timeout: float) -> None:
    """SIGTERM to the whole group, wait up to ``timeout``, then SIGKILL and wait again."""
    signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        signal_group(process, signal.SIGKILL)
        process.wait(timeout=timeout)


def tail(path: Path, count: int) -> list[str]:
    """The last ``count`` lines of a file that may be large; [] if it cannot be read."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - _TAIL_WINDOW_BYTES))
            data = handle.read()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    if size > _TAIL_WINDOW_BYTES:
        lines = lines[1:]  # the first one is cut
    return lines[-count:]


def describe_exit(returncode: int | None) -> str:
    """``still running``, ``exit code 1`` or ``killed by SIGKILL``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit code {returncode}"
