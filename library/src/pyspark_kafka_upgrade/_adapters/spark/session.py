"""The SparkSession a job runs in, with the machine checked first.

Spark reports a missing Java, a wrong one, a Python worker without pyarrow or an
unloadable Kafka connector late and obscurely: a JVM that exits without saying why, a
"Python worker failed to connect back" after ten seconds, a NoSuchMethodError at the
first batch. Each is checked here before or right after the JVM starts, and refused
with one line that says what to do.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pyspark
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._adapters.spark.delta_jars import ADVICE as DELTA_ADVICE
from pyspark_kafka_upgrade._adapters.spark.delta_jars import (
    DELTA_EXTENSION_CLASS,
    DELTA_SESSION_CONF,
    LOCAL_DELTA_CONF,
    DeltaUnavailableError,
    delta_conf,
    delta_package,
    fetch_delta_jars,
)
from pyspark_kafka_upgrade._adapters.spark.kafka_jars import (
    ADVICE,
    KAFKA_PROVIDER_CLASS,
    ConnectorUnavailableError,
    builtin_connector_conf,
    connector_package,
    describe_jars,
    fetch_connector_jars,
)
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError

MINIMUM_JAVA = 17
# Set when this Python was started by a JVM that is already running: spark-submit's (its
# gateway) or a platform's driver. That JVM's classpath was fixed by whoever launched it, so
# the connector's jars come from there (spark-submit's --jars or --packages, the platform's
# runtime), never from this machine's Maven cache.
LAUNCHER_ENV_VARS = ("PYSPARK_GATEWAY_PORT", "DATABRICKS_RUNTIME_VERSION")
_JAVA_VERSION = re.compile(r'version "(?P<version>[^"]+)"')
_CHECK_TIMEOUT_S = 60.0

Runner = Callable[[Sequence[str]], tuple[int, str]]


class SparkEnvironmentError(PipelineError):
    """Java or the Python that Spark's workers run is missing or unsuitable."""


def build_spark_session(
    settings: Settings,
    *,
    app_name: str,
    master: str | None = None,
    extra_conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Check the machine, start (or join) the SparkSession, and check the Kafka connector.

    ``extra_conf`` wins over what this function sets, except that ``spark.jars`` is merged
    with the connector's.
    """
    builtin = settings.kafka.connector == "builtin"
    delta = settings.sink.format == "delta"
    check_java()
    if not launched_by_spark(os.environ):
        # Resolved with Maven on first use (a progress line on stderr), from the cache after.
        if builtin:
            fetch_connector_jars(pyspark.__version__)
        if delta:
            fetch_delta_jars(pyspark.__version__)
    conf = spark_conf(settings, extra_conf=extra_conf)
    local = master is None or master.startswith("local")
    if delta and local and not launched_by_spark(os.environ):
        for key, value in LOCAL_DELTA_CONF.items():
            conf.setdefault(key, value)  # the caller's own choice stands
    python = conf["spark.pyspark.python"]
    check_pyarrow(python)
    # Python data sources start their workers with PYSPARK_PYTHON from the JVM's
    # environment, not with spark.pyspark.python (measured); without it they run whatever
    # "python3" is first on PATH and die with "Python worker exited unexpectedly".
    os.environ["PYSPARK_PYTHON"] = python
    already_running = SparkSession.getActiveSession() is not None
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = _start(builder)
    if builtin:
        _require(session, conf, _kafka_provider(), already_running=already_running)
    if delta:
        _require(session, conf, _delta(), already_running=already_running)
    return session


@contextmanager
def session_conf(spark: SparkSession, conf: Mapping[str, str]) -> Iterator[None]:
    """``conf`` set on ``spark`` for the block, then what was there before: a command's
    settings must not outlive it in a session someone else shares (a test's)."""
    before: dict[str, str | None] = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def launched_by_spark(env: Mapping[str, str]) -> bool:
    """Whether a JVM started this Python (spark-submit, a platform), with its jars fixed."""
    return any(env.get(name, "").strip() for name in LAUNCHER_ENV_VARS)


def local_session_factory(
    settings: Settings,
    *,
    purpose: str,
    reads_kafka: bool = True,
    master: str | None = "local[1]",
) -> Callable[[], SparkSession]:
    """One session for a CLI command, started on first use, then reused: local and
    single-core by default; ``master=None`` leaves the choice to spark-submit or Spark.

    A command that reads no Kafka (``output show``, ``checkpoint show``) passes
    ``reads_kafka=False``: its session is built as for the pip-only connector, since the
    built-in one would resolve its jars from Maven first.
    """
    if not reads_kafka:
        settings = dataclasses.replace(
            settings, kafka=dataclasses.replace(settings.kafka, connector="python")
        )
    sessions: list[SparkSession] = []

    def session() -> SparkSession:
        if not sessions:
            sessions.append(
                build_spark_session(
                    settings,
                    app_name=f"{settings.pipeline.name}-{purpose}",
                    master=master,
                    # Stage progress bars on stderr would interleave with the command's output.
                    extra_conf={"spark.ui.showConsoleProgress": "false"},
                )
            )
        return sessions[0]

    return session


def command_session(
    settings: Settings,
    *,
    purpose: str,
    given: SparkSession | Callable[[], SparkSession] | None = None,
) -> Callable[[], SparkSession]:
    """The session of a CLI command that reads no Kafka, started only if it is called.

    ``given`` is a session, or a function returning one, that a caller (a test) already
    has; otherwise a local single-core session, see :func:`local_session_factory`.
    """
    if isinstance(given, SparkSession):
        return lambda: given
    if given is not None:
        return given
    return local_session_factory(settings, purpose=purpose, reads_kafka=False)


def spark_conf(
    settings: Settings,
    *,
    extra_conf: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    spark_version: str | None = None,
) -> dict[str, str]:
    """Every conf :func:`build_spark_session` sets; no side effects, so it is testable."""
    env = os.environ if env is None else env
    user = dict(extra_conf or {})
    conf = {
        # Windows and watermarks are reasoned about in UTC; the machine's zone must not leak in.
        "spark.sql.session.timeZone": "UTC",
        "spark.pyspark.python": worker_python(user, env),
    }
    version = spark_version or pyspark.__version__
    jars: list[str] = []
    if settings.kafka.connector == "builtin" and not launched_by_spark(env):
        jars.append(builtin_connector_conf(version, env)["spark.jars"])
    if settings.sink.format == "delta":
        if not launched_by_spark(env):
            jars.append(delta_conf(version, env)["spark.jars"])
        if not env.get("DATABRICKS_RUNTIME_VERSION", "").strip():
            # Databricks' runtime has Delta in its own catalog: replacing it would hide
            # Unity Catalog. Under spark-submit the jars come from --packages, these do not.
            conf.update(DELTA_SESSION_CONF)
    if jars:
        # The caller's own jars or packages are kept beside the connector's and Delta's.
        conf["spark.jars"] = ",".join(
            item for item in (user.pop("spark.jars", "").strip(), *jars) if item
        )
    conf.update(user)
    return conf


def worker_python(extra_conf: Mapping[str, str], env: Mapping[str, str]) -> str:
    """The interpreter for Spark's Python workers: the caller's choice, else this one."""
    chosen = extra_conf.get("spark.pyspark.python") or env.get("PYSPARK_PYTHON", "").strip()
    # sys.executable, not "python3" from PATH: the workers need this venv's packages.
    return chosen or sys.executable


def check_pyarrow(python: str, runner: Runner | None = None) -> None:
    """Refuse when the workers' interpreter cannot import pyarrow (rows cross through Arrow)."""
    advice = f"install it for {python} (pip install pyarrow)"
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        try:
            import pyarrow  # noqa: F401
        except ImportError as error:
            raise SparkEnvironmentError(
                f"pyarrow cannot be imported ({error}); Spark's Python workers need it: {advice}"
            ) from None
        return
    code, output = _run([python, "-c", "import pyarrow"], runner)
    if code != 0:
        raise SparkEnvironmentError(
            f"Spark's Python workers run {python} (PYSPARK_PYTHON or spark.pyspark.python), "
            f"which cannot import pyarrow ({_last_line(output)}): {advice}, or unset it"
        )


def check_java(env: Mapping[str, str] | None = None, runner: Runner | None = None) -> int:
    """The major version of the Java Spark will start; refuse when it is missing or too old."""
    env = os.environ if env is None else env
    java = java_executable(env)
    code, output = _run([java, "-version"], runner)
    version = parse_java_version(output)
    if code != 0 or version is None:
        raise SparkEnvironmentError(
            f"`{java} -version` failed ({_first_line(output)}); Spark needs Java "
            f"{MINIMUM_JAVA} or later: set JAVA_HOME to a working JDK"
        )
    if version < MINIMUM_JAVA:
        raise SparkEnvironmentError(
            f"{java} is Java {version} ({_first_line(output)}); Spark 4 needs Java "
            f"{MINIMUM_JAVA} or later: set JAVA_HOME to a JDK {MINIMUM_JAVA}+"
        )
    return version


def java_executable(env: Mapping[str, str]) -> str:
    """The java that Spark's launch scripts will run: $JAVA_HOME/bin/java, else PATH's."""
    home = env.get("JAVA_HOME", "").strip()
    if home:
        candidate = Path(home) / "bin" / "java"
        if not os.access(candidate, os.X_OK):
            raise SparkEnvironmentError(
                f"JAVA_HOME={home} has no executable bin/java; point JAVA_HOME at a JDK "
                f"{MINIMUM_JAVA} or later"
            )
        return str(candidate)
    found = shutil.which("java", path=env.get("PATH", ""))
    if found is None:
        raise SparkEnvironmentError(
            f"java is not on PATH and JAVA_HOME is not set; Spark needs Java {MINIMUM_JAVA} "
            "or later: install a JDK and set JAVA_HOME"
        )
    return found


def parse_java_version(output: str) -> int | None:
    """The major version in ``java -version`` output: 17 for "17.0.15", 8 for "1.8.0_402"."""
    match = _JAVA_VERSION.search(output)
    if match is None:
        return None
    parts = re.split(r"[._+-]", match["version"])
    major = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]
    return int(major) if major.isdigit() else None


def _start(builder: SparkSession.Builder) -> SparkSession:
    try:
        return builder.getOrCreate()
    except PySparkRuntimeError as error:
        if error.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        raise SparkEnvironmentError(
            "Spark's JVM exited at startup (its output is printed above); check the spark.* "
            "settings passed to the session"
        ) from None


@dataclasses.dataclass(frozen=True, slots=True)
class _Required:
    """A class some jars must bring, and how to say that they did not."""

    class_name: str
    what: str  # "the built-in Kafka connector", "Delta Lake"
    error: type[PipelineError]
    under_spark_submit: str  # what to pass spark-submit instead
    advice: str  # what to do on this machine


def _kafka_provider() -> _Required:
    return _Required(
        KAFKA_PROVIDER_CLASS,
        "the built-in Kafka connector",
        ConnectorUnavailableError,
        f"pass its jars with --jars (`connector fetch` lists them) or --packages "
        f"{connector_package(pyspark.__version__)} (deploy/submit.sh does)",
        ADVICE,
    )


def _delta() -> _Required:
    return _Required(
        DELTA_EXTENSION_CLASS,
        "Delta Lake",
        DeltaUnavailableError,
        f"pass --packages {delta_package(pyspark.__version__)} or its jars with --jars "
        "(`connector fetch` lists them)",
        DELTA_ADVICE,
    )


def _require(
    session: SparkSession,
    conf: Mapping[str, str],
    required: _Required,
    *,
    already_running: bool,
) -> None:
    # Jars that are missing, unreadable or lack the class surface only here, at class
    # loading: Spark itself starts without complaint.
    jvm = session.sparkContext._jvm
    if jvm is not None and jvm.org.apache.spark.util.Utils.classIsLoadable(required.class_name):
        return
    named = f"{required.what} ({required.class_name})"
    if launched_by_spark(os.environ):
        raise required.error(
            f"{named} is not on the classpath spark-submit gave this job: "
            f"{required.under_spark_submit}, or use the platform's Spark runtime that ships it"
        )
    if already_running:
        raise required.error(
            f"{named} is not loadable in the SparkSession that was already running in this "
            "process; jars load only when the first session starts, so build this one first"
        )
    session.stop()
    raise required.error(
        f"Spark started, but {required.class_name} is not loadable from the jars "
        f"{describe_jars(conf)}; {required.advice}"
    )


def _run(command: Sequence[str], runner: Runner | None) -> tuple[int, str]:
    if runner is not None:
        return runner(command)
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_CHECK_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return 1, str(error)
    # java -version writes to stderr.
    return done.returncode, done.stderr + done.stdout


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no output")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
