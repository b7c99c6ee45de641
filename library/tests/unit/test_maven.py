"""Jars from Maven: the cache is whole or absent, and `mvn` failing or hanging gives one line.

A stand-in `mvn` (a shell script, chosen through $MVN) plays each of Maven's behaviours;
the real one is exercised by the integration tests that start Kafka and the connector.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from pyspark_kafka_upgrade._adapters.spark import maven

COORDINATES = ["org.example:thing_2.13:1.2.3"]


def fake_mvn(tmp_path: Path, body: str) -> dict[str, str]:
    """An environment whose `mvn` is a script with ``body``; it counts its calls in a file."""
    script = tmp_path / "bin" / "fake-mvn"
    script.parent.mkdir(parents=True, exist_ok=True)
    calls = tmp_path / "calls"
    script.write_text(f"#!/bin/sh\necho called >> {calls}\n{body}\n")
    script.chmod(0o755)
    return {
        "MVN": str(script),
        "JAR_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": os.environ.get("PATH", ""),
    }


# Writes two jars where -DoutputDirectory= says, as copy-dependencies does.
COPY_TWO_JARS = """
for arg in "$@"; do
  case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac
done
touch "$out/thing_2.13-1.2.3.jar" "$out/dep-4.5.jar"
"""


def calls(tmp_path: Path) -> int:
    path = tmp_path / "calls"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_resolves_once_then_serves_the_cache(tmp_path: Path) -> None:
    env = fake_mvn(tmp_path, COPY_TWO_JARS)
    said: list[str] = []

    first = maven.runtime_jars(COORDINATES, env=env, progress=said.append)
    second = maven.runtime_jars(COORDINATES, env=env, progress=said.append)

    assert [jar.name for jar in first] == ["dep-4.5.jar", "thing_2.13-1.2.3.jar"]
    assert second == first
    assert calls(tmp_path) == 1
    assert said[0].startswith("resolving org.example:thing_2.13:1.2.3 with Maven into ")
    # Only the entry (and the lock file) is left in the cache: no staging directories.
    left = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert left == [".lock", maven.entry_name(COORDINATES)]


def test_a_failure_quotes_the_command_and_mavens_first_error(tmp_path: Path) -> None:
    env = fake_mvn(
        tmp_path,
        'echo "[INFO] Scanning"\n'
        'echo "\033[1;31m[ERROR]\033[m Failed to execute goal: could not resolve thing"\n'
        'echo "[ERROR] -> [Help 1]"\nexit 1',
    )

    with pytest.raises(maven.MavenError) as raised:
        maven.runtime_jars(COORDINATES, env=env, progress=lambda _: None)

    message = str(raised.value)
    assert message.startswith("`mvn --batch-mode")
    assert "dependency:copy-dependencies" in message
    assert "exited 1: Failed to execute goal: could not resolve thing" in message
    assert "\n" not in message
    assert maven.cached_jars(COORDINATES, env) == []
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".lock"]


def test_a_maven_that_hangs_is_stopped_at_the_deadline(tmp_path: Path) -> None:
    env = fake_mvn(tmp_path, "sleep 60")
    started = time.monotonic()

    with pytest.raises(maven.MavenError, match="did not finish within 1 s"):
        maven.runtime_jars(COORDINATES, env=env, timeout_s=1.0, progress=lambda _: None)

    assert time.monotonic() - started < 10
    assert maven.cached_jars(COORDINATES, env) == []


def test_no_maven_is_one_line(tmp_path: Path) -> None:
    env = {"MVN": "", "JAR_CACHE_DIR": str(tmp_path / "cache")}

    with pytest.raises(maven.MavenError, match=r"no `mvn` on PATH \(MVN is empty\)$"):
        maven.runtime_jars(COORDINATES, env=env)


def test_a_pruned_entry_counts_as_none(tmp_path: Path) -> None:
    env = fake_mvn(tmp_path, COPY_TWO_JARS)
    jars = maven.runtime_jars(COORDINATES, env=env, progress=lambda _: None)
    jars[0].unlink()

    assert maven.cached_jars(COORDINATES, env) == []
    assert len(maven.runtime_jars(COORDINATES, env=env, progress=lambda _: None)) == 2
    assert calls(tmp_path) == 2


def test_the_pom_depends_on_each_coordinate_and_names_no_repository() -> None:
    pom = maven.throwaway_pom(["a.b:c:1", "d.e:f_2.13:2.0-rc1"])

    assert "<groupId>a.b</groupId><artifactId>c</artifactId><version>1</version>" in pom
    assert "<artifactId>f_2.13</artifactId><version>2.0-rc1</version>" in pom
    assert "<repositor" not in pom  # mvn's own settings decide where jars come from


@pytest.mark.parametrize("bad", ["a:b", "a:b:c:d", "a b:c:1", ""])
def test_a_malformed_coordinate_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="is not a Maven coordinate"):
        maven.entry_name([bad])


def test_the_cache_follows_xdg_unless_chosen(tmp_path: Path) -> None:
    assert maven.cache_root({"JAR_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert maven.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "pyspark-kafka-upgrade" / "jars"
    )


def test_an_mvn_that_is_not_there_is_named(tmp_path: Path) -> None:
    env = {"MVN": str(tmp_path / "no-such-mvn"), "JAR_CACHE_DIR": str(tmp_path / "cache")}

    with pytest.raises(maven.MavenError, match=r"MVN=.*no-such-mvn is not an executable$"):
        maven.runtime_jars(COORDINATES, env=env)


def test_an_unusable_cache_is_one_line(tmp_path: Path) -> None:
    env = fake_mvn(tmp_path, COPY_TWO_JARS)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    env["JAR_CACHE_DIR"] = str(blocker / "cache")

    with pytest.raises(maven.MavenError, match="is not usable"):
        maven.runtime_jars(COORDINATES, env=env, progress=lambda _: None)
    assert calls(tmp_path) == 0


def test_a_second_process_waits_for_the_first_and_uses_its_entry(tmp_path: Path) -> None:
    # Both start at once against a Maven that takes a while: one resolves, one waits.
    env = fake_mvn(tmp_path, "sleep 1\n" + COPY_TWO_JARS)
    results: list[list[Path]] = []

    def resolve() -> None:
        results.append(maven.runtime_jars(COORDINATES, env=env, progress=lambda _: None))

    threads = [threading.Thread(target=resolve) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(results) == 2 and results[0] == results[1] and len(results[0]) == 2
    assert calls(tmp_path) == 1
