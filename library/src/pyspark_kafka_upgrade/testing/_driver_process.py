"""The pipeline's CLI as a process of its own, so that a test can kill it as an operator's
machine would: SIGKILL to its whole process group (the Python driver, Spark's JVM and the
Python workers it started), with no chance to clean up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pyspark_kafka_upgrade.testing._waiting as waiting

# The reference pipeline's CLI; a project passes its own module.
MODULE = "pyspark_kafka_upgrade._example"

# A JVM starting cold on a busy 2-core machine, then a few batches.
START_TIMEOUT_S = 240


class DriverProcess:
    """One CLI command running in its own session; its output is collected line by line."""

    def __init__(self, arguments: Sequence[str], cwd: Path, module: str = MODULE) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.command = [sys.executable, "-m", module, *arguments]
        self.process = _start_in_own_group(self.command, cwd=cwd, env=env, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def pause(self) -> None:
        """SIGSTOP the Python driver only: the listeners that write the ledger cannot run."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def freeze(self) -> None:
        """SIGSTOP the whole process group: nothing it started moves until it is killed, so
        what the test sees on disk is what the kill leaves."""
        os.killpg(self.process.pid, signal.SIGSTOP)

    def kill(self) -> None:
        """SIGKILL the whole process group, and reap the driver."""
        if self.process.poll() is None or _group_alive(self.process.pid):
            with suppress(ProcessLookupError):  # it died between the check and the kill
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)
        self._reader.join(timeout=10)

    def wait(self, timeout: float) -> int:
        """The exit code, once the command ended by itself within ``timeout`` seconds."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{' '.join(self.command[2:4])} did not end within {timeout:.0f} s; "
                f"its output:\n{self.output}"
            ) from None
        self._reader.join(timeout=10)
        return code


def _start_in_own_group(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], stderr: int
) -> subprocess.Popen[str]:
    """Start ``command`` with its output piped, in a session and process group of its own:
    killing the group kills every driver and JVM it started, and a Ctrl-C at the terminal
    reaches the test run only."""
    return subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        start_new_session=True,
    )


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@contextmanager
def started(arguments: Sequence[str], cwd: Path, module: str = MODULE) -> Iterator[DriverProcess]:
    """A driver process that is killed, with everything it started, when the block ends."""
    driver = DriverProcess(arguments, cwd, module)
    try:
        yield driver
    finally:
        driver.kill()


@dataclass(frozen=True)
class SignalledRun:
    """What a run stopped by SIGTERM printed, before the signal and in all, and its exit."""

    before_signal: list[str]
    output: str
    returncode: int


def sigterm_after_second_batch(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    start_timeout: float,
    stop_timeout: float,
) -> SignalledRun:
    """Start ``command`` (a `run`), send it SIGTERM once it reports its second batch.

    It runs in a session of its own and is killed with its group if it outlives the test.
    """
    driver = _start_in_own_group(command, cwd=cwd, env=env, stderr=subprocess.DEVNULL)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(driver.stdout or []), daemon=True)
    reader.start()
    try:
        waiting.wait_until(
            lambda: (
                any(line.startswith("batch 1  aggregates") for line in lines)
                or driver.poll() is not None
            ),
            timeout=start_timeout,
            message="the run never reported its second batch",
        )
        assert driver.poll() is None, "".join(lines)
        before_signal = list(lines)
        driver.send_signal(signal.SIGTERM)
        returncode = driver.wait(timeout=stop_timeout)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    reader.join(timeout=10)
    return SignalledRun(before_signal, "".join(lines), returncode)


def run_in_own_group(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its end in a process group of its own, its output collected; on a
    timeout, kill the group: every driver and JVM it started (spark-submit's children)."""
    process = _start_in_own_group(command, cwd=cwd, env=env, stderr=subprocess.PIPE)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    return subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)
