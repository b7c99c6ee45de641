"""The class archive: one build per Java and Spark install, whole or absent, and a JVM that
Spark's launcher starts maps Spark's classes from it, silently refusing one that does not
fit."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pyspark
import pytest

from pyspark_kafka_upgrade.testing import _class_archive
from pyspark_kafka_upgrade.testing._class_archive import (
    DYNAMIC_ARCHIVE_MAGIC,
    QUIET,
    ClassArchive,
    archive_directory,
    archive_key,
    prune,
    spark_class_archive,
)
from pyspark_kafka_upgrade.testing._jvm import TEST_JVM_OPTIONS

# A cold JVM on a busy machine.
TIMEOUT_S = 120


def fake_install(root: Path) -> tuple[Path, Path]:
    java = root / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    (root / "jdk" / "lib" / "server").mkdir(parents=True)
    (root / "jdk" / "lib" / "server" / "classes.jsa").write_text("base")
    jars = root / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_text("classes")
    return java, jars


def test_the_key_changes_with_a_jar_or_the_javas_own_base_archive(tmp_path: Path) -> None:
    java, jars = fake_install(tmp_path)
    first = archive_key(java, jars)
    assert archive_key(java, jars) == first
    os.utime(jars / "spark-core.jar", ns=(1, 1))
    touched = archive_key(java, jars)
    assert touched != first
    # `java -Xshare:dump` rewrites the base archive: every archive on top of it is stale.
    (java.parent.parent / "lib" / "server" / "classes.jsa").write_text("rebuilt")
    assert archive_key(java, jars) not in (first, touched)


def builds_counted(monkeypatch: pytest.MonkeyPatch, failure: str | None = None) -> list[Path]:
    built: list[Path] = []

    def build(path: Path, options: object, env: object, timeout_s: float) -> str | None:
        built.append(path)
        # As long as a real build, relative to the others' start: they all wait.
        time.sleep(0.5)
        if failure is None:
            path.write_bytes(b"archive")
        return failure

    monkeypatch.setattr(_class_archive, "_build", build)
    return built


def test_runs_that_start_together_build_once_and_map_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = builds_counted(monkeypatch)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    results = []
    together = threading.Barrier(4)

    def start() -> None:
        together.wait(TIMEOUT_S)
        results.append(spark_class_archive((), env))

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT_S)
    assert len(built) == 1
    assert {archive.path for archive in results} == {built[0]}
    assert built[0].parent == archive_directory(env)
    assert sum("built in" in archive.note for archive in results) == 1
    assert spark_class_archive((), env).java_options() == (
        f"-XX:SharedArchiveFile={built[0]}",
        *QUIET,
    )


def test_a_build_that_fails_leaves_no_archive_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = builds_counted(monkeypatch, failure="its run exited with 1: no space left")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    archive = spark_class_archive((), env)
    assert archive.path is None
    assert archive.java_options() == ()
    assert archive.note == (
        "none (its run exited with 1: no space left); Spark's JVMs start without one"
    )
    assert not list(archive_directory(env).glob("*.jsa"))
    # The next run tries again.
    spark_class_archive((), env)
    assert len(built) == 2


def test_without_java_there_is_no_archive_and_no_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = builds_counted(monkeypatch)
    archive = spark_class_archive((), {"PATH": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)})
    assert archive.note == "none (no java: neither JAVA_HOME nor PATH has one)"
    assert built == []


def session_archive() -> Path:
    """This install's archive, as an integration run maps it (built here if none is)."""
    archive = spark_class_archive(TEST_JVM_OPTIONS, os.environ)
    assert archive.path is not None, archive.note
    return archive.path


def spark_submit_version(options: str, log: Path) -> subprocess.CompletedProcess[str]:
    # The JVM Spark's launcher starts for every driver, with its class path.
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"{options} -Xlog:class+load=info:file={log}"}
    return subprocess.run(
        [str(spark_submit), "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def from_the_archive(log: Path) -> int:
    return sum("source: shared objects file (top)" in line for line in log.read_text().split("\n"))


def test_sparks_launcher_starts_a_jvm_that_maps_sparks_classes_from_the_archive(
    tmp_path: Path,
) -> None:
    archive = session_archive()
    mapped = spark_submit_version(
        f"-XX:SharedArchiveFile={archive} {' '.join(QUIET)}", tmp_path / "a"
    )
    assert mapped.returncode == 0, mapped.stderr
    # Spark's classes, thousands of them, not only the JDK's.
    assert from_the_archive(tmp_path / "a") > 1000
    assert (
        "org.apache.spark.deploy.SparkSubmit source: shared objects file (top)"
        in (tmp_path / "a").read_text()
    )
    # The control: without the archive, none.
    plain = spark_submit_version("", tmp_path / "b")
    assert plain.returncode == 0, plain.stderr
    assert from_the_archive(tmp_path / "b") == 0


def test_a_jvm_that_cannot_map_the_archive_starts_without_it_and_says_nothing(
    tmp_path: Path,
) -> None:
    # Another class path than the one it was built for, as after a reinstall of Spark.
    java = Path(os.environ.get("JAVA_HOME", "/nonexistent")) / "bin" / "java"
    command = [str(java) if java.is_file() else "java", "-cp", str(tmp_path), "-version"]
    options = [f"-XX:SharedArchiveFile={session_archive()}", *QUIET]
    refused = subprocess.run(
        [command[0], *options, *command[1:]],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert refused.returncode == 0
    assert refused.stdout == ""
    assert "warning" not in refused.stderr
    # The control: without QUIET the JVM says so, on stdout, where commands print JSON.
    loud = subprocess.run(
        [command[0], options[0], *command[1:]],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert "Unable to use shared archive" in loud.stdout


# A stand-in for the workload, run as it is: it writes where the JVM would dump.
WRITES = """
import os, sys
[option] = [o for o in os.environ["SPARK_SUBMIT_OPTS"].split() if "ArchiveClassesAtExit" in o]
open(option.partition("=")[2], "wb").write(bytes.fromhex(sys.argv[1]))
"""


def build_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, workload: str) -> ClassArchive:
    monkeypatch.setattr(_class_archive, "_WORKLOAD", workload)
    return spark_class_archive((), {**os.environ, "XDG_CACHE_HOME": str(tmp_path)})


def test_a_file_that_is_no_dynamic_archive_is_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = build_with(monkeypatch, tmp_path, WRITES.replace("sys.argv[1]", '"00" * 64'))
    assert archive.path is None
    assert "the JVM wrote no dynamic archive (64 bytes)" in archive.note
    # No archive and no partial file: only the lock and the install's record.
    left = archive_directory({"XDG_CACHE_HOME": str(tmp_path)}).iterdir()
    assert sorted(path.suffix for path in left) == [".json", ".lock"]
    # The control: the same file with the magic is kept.
    kept = build_with(
        monkeypatch, tmp_path, WRITES.replace("sys.argv[1]", f'"{DYNAMIC_ARCHIVE_MAGIC.hex()}"')
    )
    assert kept.path is not None
    assert kept.path.read_bytes() == DYNAMIC_ARCHIVE_MAGIC


def test_a_run_that_fails_is_named_by_its_last_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = build_with(monkeypatch, tmp_path, "import sys\nsys.exit('no JVM today')")
    assert archive.note == (
        "none (its run exited with 1: no JVM today); Spark's JVMs start without one"
    )


def test_a_cache_that_cannot_be_written_leaves_the_run_without_an_archive(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    archive = spark_class_archive((), {**os.environ, "XDG_CACHE_HOME": str(blocked)})
    assert archive.path is None
    assert archive.note.startswith("none ([Errno 20] Not a directory")


def test_a_build_drops_the_archives_of_installs_that_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds_counted(monkeypatch)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    directory = archive_directory(env)
    directory.mkdir(parents=True)
    kept_jars = tmp_path / "kept" / "jars"
    kept_jars.mkdir(parents=True)
    for key, jars in (("gone", tmp_path / "deleted-venv" / "jars"), ("kept", kept_jars)):
        for suffix in (".jsa", ".lock"):
            (directory / f"{key}{suffix}").write_bytes(b"")
        (directory / f"{key}.json").write_text(json.dumps({"jars": str(jars)}))
    built = spark_class_archive((), env)
    assert built.path is not None
    assert sorted(path.name for path in directory.iterdir()) == sorted(
        [
            "kept.jsa",
            "kept.lock",
            "kept.json",
            built.path.name,
            built.path.with_suffix(".lock").name,
            built.path.with_suffix(".json").name,
        ]
    )
    # The new archive's record names this install, so it stays while the install does.
    assert prune(directory) == []
