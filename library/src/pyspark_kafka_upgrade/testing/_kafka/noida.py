"""The ``noida`` backend: the ``noida-db`` broker from PyPI, a single binary that speaks the
Kafka wire protocol, run as a child process on 127.0.0.1 with a fresh data directory.

It needs nothing but pip, which makes it ``auto``'s last resort. Like the ``apache`` broker it
runs in its own process group, and the kernel kills it should the test run die first.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark_kafka_upgrade.testing._kafka.backend import (
    BACKEND_ENV_VAR,
    KafkaBackend,
    KafkaBackendError,
)
from pyspark_kafka_upgrade.testing._processes import dies_with_this_process, stop_group
from pyspark_kafka_upgrade.testing._waiting import wait_until

_NOIDA_PACKAGE = "noida_db"
_NOIDA_DISTRIBUTION = "noida-db"
_NOIDA_START_TIMEOUT_S = 15.0
_NOIDA_STOP_TIMEOUT_S = 10.0
# noida-db announces each service on stdout as "  kafka          127.0.0.1:42429".
_NOIDA_KAFKA_LINE = re.compile(r"^\s*kafka\s+(?P<address>\S+:\d+)\s*$")
# The wheel's binary is linked against a newer glibc's optional symbol; the loader complains
# on stderr but the broker works. Hide that line so it is not mistaken for the cause of a
# real failure.
_HARMLESS_STDERR = re.compile(r"weak version `GLIBC_[\d.]+' not found")


def describe_noida() -> str:
    """What the header says of the ``noida`` backend."""
    return (
        f"{_noida_version()} broker binary from PyPI on 127.0.0.1 with a fresh data dir, "
        "started on first use"
    )


@contextmanager
def noida_backend(env: Mapping[str, str]) -> Iterator[KafkaBackend]:
    """A noida-db broker of a fresh data directory, stopped and removed on exit."""
    del env  # the noida-db broker has no settings
    if importlib.util.find_spec(_NOIDA_PACKAGE) is None:
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=noida needs the PyPI package {_NOIDA_DISTRIBUTION}==0.2.3"
        )
    # The bundled binary itself, not the `noida-db` console script: the script is a Python
    # wrapper, and signalling it would leave the real broker running.
    resource = importlib.resources.files(_NOIDA_PACKAGE) / "noida-db"
    # A fresh directory per session: noida-db rewrites its whole state file on every change,
    # so leftovers from earlier runs would both slow it down and leak data between sessions.
    data_dir = tempfile.mkdtemp(prefix="kafka-test-noida-db-")
    try:
        with importlib.resources.as_file(resource) as binary:
            broker = _NoidaProcess(binary, Path(data_dir))
            try:
                address = broker.wait_for_address(_NOIDA_START_TIMEOUT_S)
                yield KafkaBackend(
                    "noida",
                    address,
                    f"{_noida_version()} at {address}, data dir {data_dir}, pid {broker.pid}",
                    pid=broker.pid,
                    exit_report=broker.exit_report,
                )
            finally:
                broker.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


class _NoidaProcess:
    """A noida-db child process whose output can never fill up and block it.

    stdout is drained on a daemon thread for the whole life of the process (the address line
    comes first, but the broker may print more later). stderr goes to an anonymous file: it
    is read only if startup fails.
    """

    def __init__(self, binary: Path, data_dir: Path) -> None:
        if not os.access(binary, os.X_OK):
            raise KafkaBackendError(f"the noida-db binary at {binary} is not executable")
        self._command = [
            str(binary),
            "start",
            "--data-dir",
            str(data_dir),
            "--only",
            "kafka",
            # Port 0: the OS picks a free port, so parallel sessions never collide.
            "--kafka-port",
            "0",
        ]
        # Closed in stop(): the file must outlive this method, so no `with` block.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                self._command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                # As for the apache broker: Ctrl-C reaches the test run, which stops this in
                # order, and the kernel kills it if the test run dies first.
                start_new_session=True,
                preexec_fn=dies_with_this_process(),
            )
        except BaseException:
            self._stderr.close()
            raise
        self.pid = self._process.pid
        self._lock = threading.Lock()
        # Bounded, because a broker that logs a lot over a long session must not grow memory.
        self._stdout_lines: deque[str] = deque(maxlen=200)
        self._address: str | None = None
        self._reader = threading.Thread(
            target=self._read_stdout, name=f"noida-db-{self.pid}-stdout", daemon=True
        )
        self._reader.start()

    def _read_stdout(self) -> None:
        stream = self._process.stdout
        if stream is None:  # not reachable: Popen was given stdout=PIPE
            return
        for line in stream:
            with self._lock:
                self._stdout_lines.append(line.rstrip("\n"))
                if self._address is None:
                    match = _NOIDA_KAFKA_LINE.match(line)
                    if match:
                        self._address = match.group("address")

    def wait_for_address(self, timeout: float) -> str:
        """The Kafka address the broker announced; raises if it exits or stays silent."""

        def address_or_exit() -> str | None:
            with self._lock:
                if self._address is not None:
                    return self._address
            if self._process.poll() is not None:
                raise KafkaBackendError(self._failure("noida-db exited during startup"))
            return None

        try:
            return wait_until(
                address_or_exit,
                timeout=timeout,
                interval=0.02,
                message="noida-db did not print its Kafka address",
            )
        except TimeoutError as exc:
            # Terminate it first, so that the output quoted in the error is complete.
            self._terminate()
            raise KafkaBackendError(self._failure(str(exc))) from exc

    def exit_report(self) -> str | None:
        """None while noida-db runs; once it has exited, its exit code and output."""
        if self._process.poll() is None:
            return None
        return self._failure("the noida-db broker exited")

    def stop(self) -> None:
        """Stop the broker and release its pipe and stderr file."""
        self._terminate()
        if self._process.stdout is not None and not self._reader.is_alive():
            self._process.stdout.close()
        self._stderr.close()

    def _terminate(self) -> None:
        """SIGTERM (noida-db saves and exits well under a second), SIGKILL if it hangs."""
        if self._process.poll() is None:
            stop_group(self._process, _NOIDA_STOP_TIMEOUT_S)
        # The pipe reaches EOF once the broker is gone; the reader must finish before the
        # pipe is closed under it.
        self._reader.join(timeout=5.0)

    def _failure(self, headline: str) -> str:
        # Give the reader a moment to collect what the broker printed just before exiting.
        self._reader.join(timeout=1.0)
        with self._lock:
            stdout = "\n".join(self._stdout_lines)
        stderr = ""
        if not self._stderr.closed:
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", errors="replace").splitlines()
            stderr = "\n".join(line for line in lines if not _HARMLESS_STDERR.search(line))
        command = " ".join(self._command)
        return (
            f"{headline}\n"
            f"command: {command}\n"
            f"exit code: {self._process.poll()}\n"
            f"--- stdout ---\n{stdout or '(empty)'}\n"
            f"--- stderr ---\n{stderr or '(empty)'}"
        )


def _noida_version() -> str:
    try:
        return f"{_NOIDA_DISTRIBUTION} {importlib.metadata.version(_NOIDA_DISTRIBUTION)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{_NOIDA_DISTRIBUTION} (not installed)"
