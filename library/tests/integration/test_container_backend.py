"""The testcontainers backend on a real container engine: a container of the default image
round-trips records through a port published on 127.0.0.1 only and is removed afterwards; a
container that dies fails the tests that need it with its last log lines; an image the
engine cannot provide makes auto fall back and an explicit choice stop, each with the
engine's own pull error in one line; and an interrupted run leaves no container.

They need an engine behind Docker's API: CI starts one (.ci/podman). Elsewhere, without
one, they are skipped with that reason; under CI a missing engine fails them.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyspark_kafka_upgrade.testing import (
    DEFAULT_KAFKA_IMAGE,
    Record,
    create_topic,
    docker_is_available,
    produce,
    unique_topic,
    wait_until,
)
from pyspark_kafka_upgrade.testing._kafka.choice import BackendChoice, resolve_backend_choice
from pyspark_kafka_upgrade.testing._kafka.image import image_problem
from pyspark_kafka_upgrade.testing._kafka.start import start_kafka_backend
from pyspark_kafka_upgrade.testing._kafka.topics import consume_all

pytestmark = pytest.mark.integration

# No such release: the engine answers, but no registry it can reach has this tag.
ABSENT_IMAGE = "apache/kafka:9.9.9"
# Every container testcontainers starts for a session has this label; its Ryuk has not.
SESSION_LABEL = "org.testcontainers.session-id"
# A container start (18-24 s measured on a loaded 2-core machine) and the inner run's own.
INNER_RUN_TIMEOUT_S = 400.0
CONTAINER_GONE_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def docker() -> Iterator[Any]:
    """A Docker API client of the engine the tests run on."""
    if not docker_is_available():
        reason = "no container engine answers Docker's API (DOCKER_HOST?)"
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the container tests, but {reason}: see .ci/podman", pytrace=False)
        pytest.skip(reason)
    client = importlib.import_module("docker").from_env(timeout=30)
    yield client
    client.close()


@pytest.fixture(autouse=True)
def default_image(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default image, whatever KAFKA_IMAGE the session was given."""
    monkeypatch.delenv("KAFKA_IMAGE", raising=False)


def labelled_containers(docker: Any) -> set[str]:
    containers = docker.containers.list(all=True, filters={"label": SESSION_LABEL})
    return {container.id for container in containers}


def test_a_container_round_trips_records_on_loopback_and_is_removed(docker: Any) -> None:
    before = labelled_containers(docker)

    with start_kafka_backend("testcontainers") as backend:
        [started] = labelled_containers(docker) - before
        container = docker.containers.get(started)
        bindings = container.attrs["HostConfig"]["PortBindings"]["9092/tcp"]
        topic = unique_topic("container")
        create_topic(backend.bootstrap_servers, topic, partitions=2)
        produce(
            backend.bootstrap_servers,
            topic,
            [Record(0, b"k", b"one", 1_000), Record(1, None, b"two", 2_000)],
        )
        records = consume_all(backend.bootstrap_servers, topic, 2)

    assert [binding["HostIp"] for binding in bindings] == ["127.0.0.1"]
    assert backend.bootstrap_servers.startswith(("127.0.0.1:", "localhost:"))
    assert backend.description.startswith(f"{DEFAULT_KAFKA_IMAGE}")
    assert [(r.partition, r.offset, r.key, r.value, r.timestamp_ms) for r in records] == [
        (0, 0, b"k", b"one", 1_000),
        (1, 0, None, b"two", 2_000),
    ]
    assert labelled_containers(docker) == before


def test_auto_names_the_engines_pull_error_and_takes_the_next_backend(
    docker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_IMAGE", ABSENT_IMAGE)
    # auto, whatever backend this session runs on.
    monkeypatch.setenv("KAFKA_BACKEND", "auto")
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    notes: list[str] = []

    choice = resolve_backend_choice(
        os.environ,
        image_unavailable=lambda env: image_problem(env, notes.append),
    )

    assert choice.name in ("apache", "noida")
    note = choice.passed_over[0]
    assert note.startswith(
        f"testcontainers skipped: the container engine answers but cannot provide {ABSENT_IMAGE}: "
    )
    assert note.endswith("; trying the next backend") and "\n" not in note
    # The engine's own reason, not the Docker SDK's "404 No such image".
    assert "No such image" not in note
    assert notes == [f"kafka backend: pulling {ABSENT_IMAGE} (not on this machine yet)"]
    assert choice != BackendChoice("testcontainers")


INNER_NEEDS_KAFKA = """
def test_first(kafka_backend):
    pass


def test_second(kafka_backend):
    pass
"""


def inner_run_on_containers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tests: str
) -> None:
    """An inner test session of ``tests`` with this suite's conftest, on the container backend."""
    pytester.makeconftest((Path(__file__).resolve().parents[1] / "conftest.py").read_text())
    pytester.makepyfile(test_inner=tests)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path for path in sys.path if path))
    monkeypatch.setenv("KAFKA_BACKEND", "testcontainers")


def test_an_explicit_choice_stops_the_run_with_the_pull_error_in_one_line(
    docker: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner_run_on_containers(pytester, monkeypatch, INNER_NEEDS_KAFKA)
    monkeypatch.setenv("KAFKA_IMAGE", ABSENT_IMAGE)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=INNER_RUN_TIMEOUT_S)

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    [line] = [
        line
        for line in output.splitlines()
        if f"cannot provide {ABSENT_IMAGE}" in line and "Exit:" in line
    ]
    explicit = "KAFKA_BACKEND=testcontainers: the container engine answers but cannot provide"
    assert f"{explicit} {ABSENT_IMAGE}: " in line
    # The run stopped at the first test: the second never started, and no traceback.
    assert "test_second" not in output
    assert "Traceback" not in output


INNER_KILLS_ITS_CONTAINER = """
import docker

from pyspark_kafka_upgrade.testing import wait_until


def test_kills_the_container(kafka_backend):
    # This session's container: the one publishing the broker's port.
    port = kafka_backend.bootstrap_servers.rsplit(":", 1)[1]
    [container] = [
        container
        for container in docker.from_env().containers.list(
            filters={"label": "org.testcontainers.session-id"}
        )
        if container.ports.get("9092/tcp", [{}])[0].get("HostPort") == port
    ]
    container.kill()
    wait_until(kafka_backend.exit_report, timeout=60, message="the container to exit")


def test_needs_the_broker(kafka_backend):
    pass
"""


def test_a_container_that_dies_mid_suite_fails_the_tests_that_need_it_with_its_log(
    docker: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner_run_on_containers(pytester, monkeypatch, INNER_KILLS_ITS_CONTAINER)
    before = labelled_containers(docker)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=INNER_RUN_TIMEOUT_S)

    result.assert_outcomes(failed=1, errors=1)
    output = result.stdout.str()
    assert "the test passed, but the Kafka broker it uses exited" in output
    assert output.count(f"({DEFAULT_KAFKA_IMAGE}) exited with code 137") >= 2
    # Its last log lines: the broker had started, and said so.
    assert "Kafka Server started" in output
    assert labelled_containers(docker) == before


INNER_WAITS = """
import os
from pathlib import Path


def test_waits(kafka_backend):
    Path(os.environ["READY_FILE"]).write_text(kafka_backend.bootstrap_servers)
    import time
    while True:
        time.sleep(0.1)
"""


def test_an_interrupted_run_leaves_no_container(
    docker: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    inner_run_on_containers(pytester, monkeypatch, INNER_WAITS)
    ready = tmp_path / "ready"
    monkeypatch.setenv("READY_FILE", str(ready))
    before = labelled_containers(docker)

    # Its own process group, as a terminal's Ctrl-C reaches the test run and nothing else.
    inner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(pytester.path)],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_until(
            lambda: ready.exists() or inner.poll() is not None,
            timeout=INNER_RUN_TIMEOUT_S,
            message="the inner run's container to start",
        )
        assert inner.poll() is None, inner.communicate()[0]
        assert len(labelled_containers(docker) - before) == 1
        os.killpg(inner.pid, signal.SIGINT)
        output, _ = inner.communicate(timeout=CONTAINER_GONE_TIMEOUT_S)
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
            inner.wait()

    assert "KeyboardInterrupt" in output
    assert labelled_containers(docker) == before
