"""The ``apache`` backend: real Apache Kafka as a child process of the test run.

One JVM is both broker and KRaft controller, listening on 127.0.0.1 only, with a fresh log
directory per session; Java and the jars come from ``apache_runtime``. The secured broker
(``secured``) is the same JVM with other listeners. It runs in its own process group, so a
Ctrl-C at the terminal reaches only the test run, which then stops it in order; and the
kernel kills it should the test run die first (Linux).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from pyspark_kafka_upgrade.testing._jvm import KAFKA_JVM_VARIABLE
from pyspark_kafka_upgrade.testing._kafka.apache_runtime import (
    ApacheRuntimeError,
    apache_runtime,
)
from pyspark_kafka_upgrade.testing._kafka.backend import (
    BACKEND_ENV_VAR,
    KafkaBackend,
    KafkaBackendError,
    Progress,
)
from pyspark_kafka_upgrade.testing._kafka.broker_settings import (
    ONE_NODE_TEST_SETTINGS,
    cluster_id,
)
from pyspark_kafka_upgrade.testing._kafka.clients import connect_admin, serves_metadata
from pyspark_kafka_upgrade.testing._kafka.listeners import ListenerLayout, PlaintextListeners
from pyspark_kafka_upgrade.testing._processes import (
    describe_exit,
    dies_with_this_process,
    free_ports,
    signal_group,
    stop_group,
    tail,
)
from pyspark_kafka_upgrade.testing._waiting import wait_until

# Measured on 2 shared cores: format ~1.5 s, startup ~3 s, SIGTERM to exit ~1.5 s. The
# deadlines leave room for a machine busy with Spark.
_KAFKA_FORMAT_TIMEOUT_S = 60.0
_KAFKA_START_TIMEOUT_S = 90.0
_KAFKA_STOP_TIMEOUT_S = 30.0
# A free port found by binding port 0 can be taken by someone else before the JVM binds it.
_KAFKA_START_ATTEMPTS = 3
_KAFKA_LOG_TAIL_LINES = 40
# A small heap: test topics hold kilobytes, and the machine runs Spark next to the broker.
# On OutOfMemoryError the JVM exits, so the broker is reported dead rather than limping on.
_KAFKA_JVM_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+ExitOnOutOfMemoryError")


@contextmanager
def apache_backend(env: Mapping[str, str], progress: Progress) -> Iterator[KafkaBackend]:
    """The backend's broker, with plaintext listeners, stopped and removed on exit."""
    with apache_broker(env, progress) as broker:
        yield KafkaBackend(
            "apache",
            broker.bootstrap_servers,
            f"Apache Kafka {broker.version} (KRaft) at {broker.bootstrap_servers}, pid "
            f"{broker.pid}, log {broker.log_file}",
            pid=broker.pid,
            exit_report=broker.exit_report,
        )


@contextmanager
def apache_broker(
    env: Mapping[str, str],
    progress: Progress,
    layout: ListenerLayout | None = None,
) -> Iterator[ApacheBroker]:
    """A running Apache Kafka broker with ``layout``'s listeners, stopped and removed on exit.

    Raises:
        KafkaBackendError: Java or the jars cannot be had, or the broker did not start.
    """
    try:
        java, jars, version = apache_runtime(env, progress)
    except ApacheRuntimeError as exc:
        raise KafkaBackendError(f"{BACKEND_ENV_VAR}=apache: {exc}") from None
    # A fresh directory per session for the log dirs, the configuration and the broker's log:
    # leftovers from an earlier run would carry its topics and offsets into this one.
    work_dir = Path(tempfile.mkdtemp(prefix="kafka-test-apache-"))
    try:
        broker = ApacheBroker(
            java,
            jars,
            version,
            work_dir,
            layout or PlaintextListeners(),
            jvm_options=env.get(KAFKA_JVM_VARIABLE, "").split(),
        )
        try:
            broker.start()
            yield broker
        finally:
            broker.stop()
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


class _PortTakenError(Exception):
    """The JVM could not bind a port picked for it: try again with new ones."""


class ApacheBroker:
    """One JVM that is a KRaft controller and a broker, listening on 127.0.0.1 only.

    Its log4j2 logs go to ``broker.log`` and its stdout and stderr (JVM errors, crashes) to
    ``jvm-output.log``, both in ``work_dir``; failures quote their last lines.
    """

    def __init__(
        self,
        java: str,
        jars: Sequence[Path],
        version: str,
        work_dir: Path,
        layout: ListenerLayout,
        *,
        jvm_options: Sequence[str] = (),
    ) -> None:
        """``jvm_options``: beside the heap's, as Kafka's scripts take
        ``KAFKA_JVM_PERFORMANCE_OPTS`` (the plugin sets the test JVM's)."""
        self.version = version
        self._jvm_options = (*_KAFKA_JVM_OPTIONS, *jvm_options)
        self.work_dir = work_dir
        self._layout = layout
        self.log_file = work_dir / "broker.log"
        self._java = java
        self._classpath = os.pathsep.join(str(jar) for jar in jars)
        self._jar_count = len(jars)
        self._jar_dir = jars[0].parent if jars else Path()
        self._work_dir = work_dir
        self._properties = work_dir / "server.properties"
        self._log4j = work_dir / "log4j2.properties"
        self._output_file = work_dir / "jvm-output.log"
        self._output: IO[bytes] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.bootstrap_servers = ""
        self.admin_client: Mapping[str, str] = {}
        self.pid: int | None = None

    # ---- starting --------------------------------------------------------------------------

    def start(self) -> None:
        """Format the log dir, start the JVM and wait until it serves metadata."""
        self._write_log4j_config()
        self._write_properties(free_ports(self._layout.ports))
        self._format()
        for attempt in range(1, _KAFKA_START_ATTEMPTS + 1):
            try:
                self._launch_and_wait()
                return
            except _PortTakenError:
                if attempt == _KAFKA_START_ATTEMPTS:
                    raise KafkaBackendError(
                        self._failure(
                            f"Apache Kafka {self.version} could not bind its ports "
                            f"{_KAFKA_START_ATTEMPTS} times"
                        )
                    ) from None
                # The log dir stays formatted: only the listeners change.
                self._write_properties(free_ports(self._layout.ports))

    def _java_command(self, main_class: str, *arguments: str) -> list[str]:
        return [
            self._java,
            *self._jvm_options,
            f"-Dlog4j2.configurationFile={self._log4j}",
            "-cp",
            self._classpath,
            main_class,
            *arguments,
        ]

    def _write_log4j_config(self) -> None:
        self._log4j.write_text(
            "\n".join(
                [
                    "status = warn",
                    # Log4j's own shutdown hook would stop logging while the broker is still
                    # shutting down; without it the log keeps the broker's last words.
                    "shutdownHook = disable",
                    "appender.file.type = File",
                    "appender.file.name = file",
                    f"appender.file.fileName = {self.log_file}",
                    "appender.file.layout.type = PatternLayout",
                    "appender.file.layout.pattern = [%d] %p %m (%c)%n",
                    "rootLogger.level = info",
                    "rootLogger.appenderRef.file.ref = file",
                    # Every config object logs all its values at INFO: about 2,000 lines per
                    # start that would push the interesting lines out of a failure's tail.
                    "logger.config.name = org.apache.kafka.common.config.AbstractConfig",
                    "logger.config.level = warn",
                    "",
                ]
            ),
            encoding="utf-8",
        )

    def _write_properties(self, ports: Sequence[int]) -> None:
        # KRaft with a static voter list, so formatting needs no --standalone. The controller
        # port must be a real one: the voter list names it.
        listeners = self._layout.listeners(ports)
        self.bootstrap_servers = listeners.bootstrap_servers
        self.admin_client = listeners.admin_client
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{ports[-1]}",
            "controller.listener.names": "CONTROLLER",
            **listeners.properties,
            "log.dirs": str(self._work_dir / "data"),
            **ONE_NODE_TEST_SETTINGS,
        }
        self._properties.write_text(
            "".join(f"{key}={value}\n" for key, value in settings.items()), encoding="utf-8"
        )

    def _start_java(
        self, stdout: int | IO[bytes], main_class: str, *arguments: str
    ) -> subprocess.Popen[bytes]:
        """A JVM of the broker's jars, in its own group and session: a Ctrl-C at the terminal
        goes to the test run only, which then stops it in order (stop())."""
        try:
            return subprocess.Popen(
                self._java_command(main_class, *arguments),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.STDOUT,
                cwd=self._work_dir,
                start_new_session=True,
                preexec_fn=dies_with_this_process(),
            )
        except OSError as exc:
            raise KafkaBackendError(f"`{self._java}` could not start: {exc}") from None

    def _format(self) -> None:
        arguments = ("format", "-c", str(self._properties), "-t", cluster_id())
        with self._start_java(subprocess.PIPE, "kafka.tools.StorageTool", *arguments) as tool:
            try:
                output = tool.communicate(timeout=_KAFKA_FORMAT_TIMEOUT_S)[0]
            except subprocess.TimeoutExpired:
                tool.kill()
                raise KafkaBackendError(
                    self._failure(
                        f"formatting the log dir of Apache Kafka {self.version} did not "
                        f"finish within {_KAFKA_FORMAT_TIMEOUT_S:.0f} s"
                    )
                ) from None
            except BaseException:
                tool.kill()  # a Ctrl-C: the tool does not outlive the test run's wait
                raise
        if tool.returncode != 0:
            lines = output.decode("utf-8", errors="replace").splitlines()
            raise KafkaBackendError(
                self._failure(
                    f"formatting the log dir of Apache Kafka {self.version} failed "
                    f"(exit code {tool.returncode}):\n" + "\n".join(lines[-_KAFKA_LOG_TAIL_LINES:])
                )
            )

    def _launch_and_wait(self) -> None:
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        process = self._launch()
        admin = connect_admin(self.bootstrap_servers, self.admin_client)

        def serving_metadata() -> bool:
            if process.poll() is not None:
                if _bind_failed(self.log_file, log_start):
                    self._close_output()
                    raise _PortTakenError
                raise KafkaBackendError(
                    self._failure(f"Apache Kafka {self.version} exited during startup")
                )
            return serves_metadata(admin, timeout=1)

        try:
            wait_until(
                serving_metadata,
                timeout=_KAFKA_START_TIMEOUT_S,
                interval=0.2,
                message=(
                    f"Apache Kafka {self.version} at {self.bootstrap_servers} did not answer "
                    "metadata requests"
                ),
            )
        except TimeoutError as exc:
            # Stop it first, so that the log quoted in the error is complete.
            self.stop()
            raise KafkaBackendError(self._failure(str(exc))) from None

    def _launch(self) -> subprocess.Popen[bytes]:
        # Closed in stop(): the JVM writes to it for the whole session.
        self._output = self._output_file.open("ab")
        try:
            process = self._start_java(self._output, "kafka.Kafka", str(self._properties))
        except KafkaBackendError:
            self._close_output()
            raise
        self._process = process
        self.pid = process.pid
        # Should the interpreter exit without leaving the context (e.g. os._exit is the only
        # thing that skips this), the broker still goes.
        atexit.register(self._kill)
        return process

    # ---- while it runs ---------------------------------------------------------------------

    def exit_report(self) -> str | None:
        """None while the JVM runs; once it has exited, its exit code and last log lines."""
        if self._process is None or self._process.poll() is None:
            return None
        return self._failure(f"the Apache Kafka {self.version} broker exited")

    def _failure(self, headline: str) -> str:
        lines = [headline]
        if self._process is not None:
            lines.append(f"pid {self._process.pid}, {describe_exit(self._process.poll())}")
        lines.append(
            f"command: {self._java} {' '.join(self._jvm_options)} -cp <{self._jar_count} jars "
            f"from {self._jar_dir}> kafka.Kafka {self._properties}"
        )
        for title, path in (("broker log", self.log_file), ("JVM output", self._output_file)):
            last = tail(path, _KAFKA_LOG_TAIL_LINES)
            lines.append(f"--- {title} ({path}), last {len(last)} lines ---")
            lines.extend(last or ["(empty)"])
        return "\n".join(lines)

    # ---- stopping --------------------------------------------------------------------------

    def stop(self) -> None:
        """SIGTERM, wait with a deadline, then SIGKILL; also on a Ctrl-C during the wait."""
        process = self._process
        if process is not None and process.poll() is None:
            try:
                stop_group(process, _KAFKA_STOP_TIMEOUT_S)
            except BaseException:
                # A second Ctrl-C while the broker shuts down: do not leave it behind.
                self._kill()
                raise
        atexit.unregister(self._kill)
        self._close_output()

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            signal_group(process, signal.SIGKILL)
            # Also runs at interpreter exit and under an interrupt: it must not raise there.
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_KAFKA_STOP_TIMEOUT_S)

    def _close_output(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None


def _bind_failed(log_file: Path, start: int) -> bool:
    try:
        with log_file.open("rb") as log:
            log.seek(start)
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return False
    return "Address already in use" in text
