"""A class-data-sharing archive of Spark's classes, so that a test's JVM maps them instead
of loading them one by one.

A test starts many JVMs (its session's, and one per command it runs: `run`, `verify`,
`output show`), each of which loads and verifies about 11,000 of Spark's classes. With
them mapped from an archive, a local SparkSession here started in 5 s of CPU instead of
11. The JVM does this itself: it records the classes a run loaded into a file at exit
(``-XX:ArchiveClassesAtExit``, Java 13+) and maps them in later runs
(``-XX:SharedArchiveFile``). What is ours is when: once per Java and Spark install, under
a lock, before any test's JVM starts (Java 19's ``-XX:+AutoCreateSharedArchive`` would
race when two JVMs start at once, and Java 17 has none).

An archive that does not fit the JVM that maps it (another Java, another class path, a
Spark reinstalled since) is refused by the JVM itself, which then starts as it would
without one; its warnings are turned off so that no command's output changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path

import portalocker

from pyspark_kafka_upgrade._adapters.spark import maven
from pyspark_kafka_upgrade.testing._jvm import (
    TEST_JVM_OPTIONS,
    spark_options_are_ours,
    use_test_jvm_options,
)

DEFAULT_TIMEOUT_S = 300.0
# Without these, a JVM refusing an archive says so on stdout, where commands print JSON.
# Every tag set that starts with cds; Spark's launcher splits the options itself, no shell
# expands the star.
QUIET = ("-Xlog:cds*=off",)
# The first four bytes of a dynamic archive (HotSpot's CDS_DYNAMIC_ARCHIVE_MAGIC, 0xf00baba8,
# little endian): a file without them is no archive of this kind.
DYNAMIC_ARCHIVE_MAGIC = bytes.fromhex("a8ab0bf0")

# What the archive holds is what this run loads: a session, JSON parsed, an event-time
# window aggregated with a watermark into an append-mode file sink with a checkpoint, a
# listener on the query, the output read back. The arguments: a directory for its files.
_WORKLOAD = """
import sys
from pyspark.sql import SparkSession, functions as F
from pyspark.sql.streaming import StreamingQueryListener

class Quiet(StreamingQueryListener):
    def onQueryStarted(self, event): pass
    def onQueryProgress(self, event): pass
    def onQueryIdle(self, event): pass
    def onQueryTerminated(self, event): pass

work = sys.argv[1]
spark = (
    SparkSession.builder.master("local[1]").appName("class-archive")
    .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
    .getOrCreate()
)
spark.streams.addListener(Quiet())
lines = ['{"user_id": "u%d", "event_time": "2026-01-01T10:0%d:00Z"}' % (i, i) for i in range(5)]
spark.createDataFrame([(line,) for line in lines], "value string").write.text(work + "/in")
events = (
    spark.readStream.schema("value string").text(work + "/in")
    .select(F.from_json("value", "user_id string, event_time timestamp").alias("event"))
    .select("event.*")
    .withWatermark("event_time", "1 minute")
    .groupBy(F.window("event_time", "10 minutes", "5 minutes"), "user_id")
    .agg(F.count("*").alias("views"), F.approx_count_distinct("user_id").alias("users"),
         F.min("event_time"), F.max("event_time"))
)
query = (
    events.writeStream.outputMode("append").format("parquet")
    .option("path", work + "/out").option("checkpointLocation", work + "/checkpoint")
    .trigger(availableNow=True).start()
)
query.awaitTermination()
spark.read.parquet(work + "/out").orderBy("window").collect()
spark.stop()
"""


@dataclasses.dataclass(frozen=True)
class ClassArchive:
    """The archive a run's Spark JVMs map, or None, and one line for the report header."""

    path: Path | None
    note: str

    def java_options(self) -> tuple[str, ...]:
        if self.path is None:
            return ()
        return (f"-XX:SharedArchiveFile={self.path}", *QUIET)


def use_class_archive(env: MutableMapping[str, str], unneeded: str | None) -> ClassArchive:
    """The archive for the Spark JVMs ``env`` starts, put into its options; none where the
    run starts few of them (``unneeded`` says why) or the environment sets its own options."""
    if unneeded is not None:
        return ClassArchive(None, f"not used ({unneeded})")
    if not spark_options_are_ours(env):
        return ClassArchive(None, "not used (SPARK_SUBMIT_OPTS is the environment's own)")
    archive = spark_class_archive(TEST_JVM_OPTIONS, env)
    use_test_jvm_options(env, archive.java_options())
    return archive


def spark_class_archive(
    jvm_options: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ClassArchive:
    """This install's archive: from the cache, else built once by a run with ``jvm_options``.
    Never raises for want of one: the tests run as well without it, only slower."""
    env = os.environ if env is None else env
    try:
        return _archive(jvm_options, env, timeout_s)
    except (OSError, RuntimeError) as error:  # a read-only cache, no home directory
        return ClassArchive(None, f"none ({error}); Spark's JVMs start without one")


def _archive(jvm_options: Sequence[str], env: Mapping[str, str], timeout_s: float) -> ClassArchive:
    jars = _spark_jars(env)
    if jars is None:
        return ClassArchive(None, "none (pyspark is not installed)")
    java = _java(env)
    if java is None:
        return ClassArchive(None, "none (no java: neither JAVA_HOME nor PATH has one)")
    path = archive_directory(env) / f"{archive_key(java, jars)}.jsa"
    if path.is_file():
        return ClassArchive(path, f"{path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    # A build is the moment to drop the archives of installs that are gone (a CI clone's
    # virtualenvs): 178 MB each, and nothing else ever removes them.
    prune(path.parent)
    lock = path.with_suffix(".lock")
    try:
        # One build per install, whichever of the run's processes (xdist's workers, nested
        # pytest runs) comes first; the others wait for it and map what it wrote. Waiting
        # longer than a build may take, so that a waiter never gives up on a build under way.
        with portalocker.Lock(str(lock), timeout=2 * timeout_s, fail_when_locked=False):
            if path.is_file():
                return ClassArchive(path, f"{path}")
            # Which install it is for, so that a later build can drop it once that is gone.
            record = {"jars": str(jars.resolve())}
            path.with_suffix(".json").write_text(json.dumps(record), encoding="utf-8")
            started = time.monotonic()
            failure = _build(path, jvm_options, env, timeout_s)
    except portalocker.LockException:
        return ClassArchive(None, f"none (another run held {lock} for {2 * timeout_s:.0f} s)")
    if failure is not None:
        return ClassArchive(None, f"none ({failure}); Spark's JVMs start without one")
    return ClassArchive(path, f"{path} (built in {time.monotonic() - started:.0f} s)")


def archive_directory(env: Mapping[str, str]) -> Path:
    # Beside the library's Maven jars.
    return maven.library_cache(env) / "class-archives"


def archive_key(java: Path, jars: Path) -> str:
    """Names what the archive fits: this Java (its binary, its VM, its own base archive) and
    these Spark jars, each by path, size and modification time, as the JVM checks them."""
    java = java.resolve()
    home = java.parent.parent
    stamped = [java, *sorted(home.glob("lib/server/*")), *sorted(jars.resolve().glob("*.jar"))]
    digest = hashlib.sha256()
    for file in stamped:
        stat = file.stat()
        digest.update(f"{file}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def prune(directory: Path) -> list[Path]:
    """Removes the archives whose Spark install no longer exists; the archives removed."""
    removed = []
    for record in directory.glob("*.json"):
        try:
            jars = Path(json.loads(record.read_text(encoding="utf-8"))["jars"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if jars.is_dir():
            continue
        for suffix in (".jsa", ".lock", ".json"):
            record.with_suffix(suffix).unlink(missing_ok=True)
        removed.append(record.with_suffix(".jsa"))
    return removed


def _spark_jars(env: Mapping[str, str]) -> Path | None:
    # As pyspark's launcher chooses them: SPARK_HOME's, else the installed package's.
    home = env.get("SPARK_HOME", "").strip()
    if home:
        jars = Path(home) / "jars"
        return jars if jars.is_dir() else None
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    return jars if jars.is_dir() else None


def _java(env: Mapping[str, str]) -> Path | None:
    # As Spark's launch scripts choose it: session.java_executable's rule, which cannot be
    # imported here (its module loads pyspark) and refuses where this only does without.
    home = env.get("JAVA_HOME", "").strip()
    if home:
        candidate = Path(home) / "bin" / "java"
        return candidate if os.access(candidate, os.X_OK) else None
    found = shutil.which("java", path=env.get("PATH", ""))
    return None if found is None else Path(found)


def _build(
    path: Path, jvm_options: Sequence[str], env: Mapping[str, str], timeout_s: float
) -> str | None:
    """Writes the archive at ``path`` whole, or nothing; the reason it could not, or None."""
    # The JVM writes at its exit; renamed into place (on the same file system) only once it
    # exited cleanly, so that no JVM ever maps half a file.
    partial = path.with_name(f".{path.stem}.{os.getpid()}.partial")
    try:
        return _dump(partial, path, jvm_options, env, timeout_s)
    finally:
        partial.unlink(missing_ok=True)


def _dump(
    partial: Path, path: Path, jvm_options: Sequence[str], env: Mapping[str, str], timeout_s: float
) -> str | None:
    with tempfile.TemporaryDirectory(prefix="class-archive-") as work:
        # Not QUIET: the JVM's messages go to the pipe, and say why a dump failed.
        options = [*jvm_options, f"-XX:ArchiveClassesAtExit={partial}"]
        child_env = {**env, "SPARK_SUBMIT_OPTS": " ".join(options)}
        command = [sys.executable, "-c", _WORKLOAD, str(Path(work) / "run")]
        process = subprocess.Popen(
            command,
            cwd=work,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            # Returns once every holder of the pipe closed it: the JVM too, after its dump.
            output, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(process)
            return f"its run took over {timeout_s:.0f} s"
        except BaseException:
            # Interrupted (Ctrl-C, a signal): no JVM left behind to write after the cleanup.
            _stop(process)
            raise
        if process.returncode != 0:
            return f"its run exited with {process.returncode}: {_last_line(output)}"
        if not partial.is_file():
            return f"the JVM wrote no archive: {_last_line(output)}"
        with partial.open("rb") as archive:
            magic = archive.read(4)
        if magic != DYNAMIC_ARCHIVE_MAGIC:
            # Kept, it would never be rebuilt: its key is the install's, not the file's.
            return f"the JVM wrote no dynamic archive ({partial.stat().st_size} bytes)"
        os.replace(partial, path)
    return None


def _stop(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
