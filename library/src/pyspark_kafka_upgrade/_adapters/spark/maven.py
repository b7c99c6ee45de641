"""Jars from Maven, resolved once into a per-user cache with the ``mvn`` the machine has.

Two things need jars that PyPI does not ship: Spark's built-in Kafka connector and, for the
tests, an Apache Kafka broker. Both are resolved the same way: a throwaway POM that depends
on the wanted artifacts, and ``mvn dependency:copy-dependencies`` for their runtime
classpath. ``mvn`` brings its own repository settings (``~/.m2/settings.xml``, mirrors,
proxies), so nothing here names a repository.

A cache entry is a directory per set of coordinates. It is built in a staging directory and
renamed into place only once complete, so an entry is either whole or absent, and two
processes resolving at once both end with the same whole entry.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from xml.sax.saxutils import escape

from pyspark_kafka_upgrade._domain.errors import PipelineError

CACHE_ENV_VAR = "JAR_CACHE_DIR"
MVN_ENV_VAR = "MVN"
DEFAULT_TIMEOUT_S = 600.0
MANIFEST = "jars.txt"
DEPENDENCY_PLUGIN_VERSION = "3.8.1"

_COORDINATE = re.compile(r"(?P<group>[\w.-]+):(?P<artifact>[\w.-]+):(?P<version>[\w.+-]+)")
# What Maven prints before the line that says why a build failed.
_ERROR_LINE = re.compile(r"^\[ERROR\]\s*(?P<text>.+)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

Progress = Callable[[str], None]


class MavenError(PipelineError):
    """``mvn`` is missing, failed, or did not finish in time."""


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """``$JAR_CACHE_DIR``, else the library's cache + ``jars``."""
    env = os.environ if env is None else env
    chosen = env.get(CACHE_ENV_VAR, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    return library_cache(env) / "jars"


def library_cache(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME`` (or ``~/.cache``) + the library's name: what it keeps per user."""
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pyspark-kafka-upgrade"


def mvn_executable(env: Mapping[str, str] | None = None) -> str | None:
    """``$MVN`` when set (empty turns Maven off), else ``mvn`` from PATH, else None."""
    env = os.environ if env is None else env
    if MVN_ENV_VAR in env:
        chosen = env[MVN_ENV_VAR].strip()
        return shutil.which(chosen, path=env.get("PATH")) if chosen else None
    return shutil.which("mvn", path=env.get("PATH"))


def entry_name(coordinates: Sequence[str]) -> str:
    """The cache directory's name for a set of coordinates: readable and file-system safe."""
    for coordinate in coordinates:
        if _COORDINATE.fullmatch(coordinate) is None:
            raise ValueError(f"{coordinate!r} is not a Maven coordinate group:artifact:version")
    return "+".join(c.replace(":", "_") for c in sorted(coordinates))


def cached_jars(coordinates: Sequence[str], env: Mapping[str, str] | None = None) -> list[Path]:
    """The jars of a complete cache entry, or ``[]`` when there is none (never resolves)."""
    entry = cache_root(env) / entry_name(coordinates)
    manifest = entry / MANIFEST
    if not manifest.is_file():
        return []
    jars = [entry / name for name in manifest.read_text(encoding="utf-8").split()]
    # An entry someone pruned by hand is as good as none.
    return jars if all(jar.is_file() for jar in jars) else []


def runtime_jars(
    coordinates: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Progress | None = None,
) -> list[Path]:
    """The runtime classpath of ``coordinates``: from the cache, else resolved with ``mvn``.

    Raises:
        MavenError: ``mvn`` is not available, failed (the message quotes its command and its
            first error), or ran past ``timeout_s``.
    """
    env = os.environ if env is None else env
    found = cached_jars(coordinates, env)
    if found:
        return found
    mvn = mvn_executable(env)
    if mvn is None:
        chosen = env.get(MVN_ENV_VAR)
        if chosen is None:
            reason = "no `mvn` on PATH"
        elif not chosen.strip():
            reason = f"no `mvn` on PATH ({MVN_ENV_VAR} is empty)"
        else:
            reason = f"{MVN_ENV_VAR}={chosen} is not an executable"
        raise MavenError(f"cannot resolve {', '.join(coordinates)}: {reason}")
    root = cache_root(env)
    try:
        root.mkdir(parents=True, exist_ok=True)
        # One resolution at a time per cache: a second process waits, then finds the entry
        # the first one made, instead of resolving again or racing it for the rename.
        with _cache_lock(root, timeout_s):
            found = cached_jars(coordinates, env)
            if found:
                return found
            _resolve_into(mvn, coordinates, root / entry_name(coordinates), timeout_s, progress)
    except OSError as error:
        raise MavenError(f"the jar cache {root} is not usable: {error}") from None
    return cached_jars(coordinates, env)


@contextmanager
def _cache_lock(root: Path, timeout_s: float) -> Iterator[None]:
    with (root / ".lock").open("a") as handle:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise MavenError(
                        f"another process has been resolving into {root} for over {timeout_s:.0f} s"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _resolve_into(
    mvn: str,
    coordinates: Sequence[str],
    entry: Path,
    timeout_s: float,
    progress: Progress | None,
) -> None:
    """Resolve into a staging directory, then rename it into place (whole or absent)."""
    staging = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    try:
        say = progress or _stderr
        say(
            f"resolving {', '.join(coordinates)} with Maven into {entry} "
            f"(once per machine; deadline {timeout_s:.0f} s)"
        )
        started = time.monotonic()
        _copy_dependencies(mvn, coordinates, staging, timeout_s)
        names = sorted(path.name for path in staging.glob("*.jar"))
        if not names:
            raise MavenError(f"`mvn` resolved no jar for {', '.join(coordinates)}")
        (staging / MANIFEST).write_text("\n".join(names) + "\n", encoding="utf-8")
        if entry.exists():
            # Damaged (jars pruned by hand), or it would be whole and we would not be here.
            shutil.rmtree(entry)
        staging.rename(entry)
        say(f"resolved {len(names)} jars in {time.monotonic() - started:.1f} s")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _copy_dependencies(
    mvn: str, coordinates: Sequence[str], output: Path, timeout_s: float
) -> None:
    with tempfile.TemporaryDirectory(prefix="maven-pom-") as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(throwaway_pom(coordinates), encoding="utf-8")
        command = [
            mvn,
            "--batch-mode",
            "--no-transfer-progress",
            "--file",
            str(pom),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={output}",
        ]
        shown = " ".join(["mvn", *command[1:]])
        try:
            # A session of its own, so that a deadline stops Maven's whole process tree.
            process = subprocess.Popen(
                command,
                cwd=work,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        except OSError as error:
            raise MavenError(f"`{shown}` could not start: {error}") from None
        try:
            output_text, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise MavenError(
                f"`{shown}` did not finish within {timeout_s:.0f} s; check that Maven can "
                "reach its repository (mirrors and proxies go in ~/.m2/settings.xml)"
            ) from None
        except BaseException:
            _kill_group(process)
            raise
        if process.returncode != 0:
            raise MavenError(f"`{shown}` exited {process.returncode}: {first_error(output_text)}")


def _kill_group(process: subprocess.Popen[str]) -> None:
    # Maven may have exited on its own by now (a Ctrl-C that reached both): nothing to kill.
    if process.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def throwaway_pom(coordinates: Sequence[str]) -> str:
    """A POM whose only purpose is to depend on ``coordinates``."""
    dependencies = []
    for coordinate in coordinates:
        match = _COORDINATE.fullmatch(coordinate)
        if match is None:
            raise ValueError(f"{coordinate!r} is not a Maven coordinate group:artifact:version")
        dependencies.append(
            "    <dependency>"
            f"<groupId>{escape(match['group'])}</groupId>"
            f"<artifactId>{escape(match['artifact'])}</artifactId>"
            f"<version>{escape(match['version'])}</version>"
            "</dependency>"
        )
    body = "\n".join(dependencies)
    return (
        "<project>\n"
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>local.jar-cache</groupId>\n"
        "  <artifactId>resolve</artifactId>\n"
        "  <version>1</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <dependencies>\n{body}\n  </dependencies>\n"
        # Pinned: otherwise the Maven release decides, and Maven 3.8 picks 2.8 (2013).
        "  <build><pluginManagement><plugins><plugin>"
        "<groupId>org.apache.maven.plugins</groupId>"
        "<artifactId>maven-dependency-plugin</artifactId>"
        f"<version>{DEPENDENCY_PLUGIN_VERSION}</version>"
        "</plugin></plugins></pluginManagement></build>\n"
        "</project>\n"
    )


def first_error(output: str) -> str:
    """The line of Maven's output that says why it failed, without colour codes."""
    for raw in output.splitlines():
        line = _ANSI.sub("", raw).strip()
        match = _ERROR_LINE.match(line)
        if match and match["text"].strip() not in {"", "->"}:
            return match["text"].strip()
    lines = [_ANSI.sub("", line).strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
