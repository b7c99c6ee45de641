"""A running Kafka broker as the tests see it, and the errors of choosing or starting one."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

BACKEND_ENV_VAR = "KAFKA_BACKEND"
BOOTSTRAP_ENV_VAR = "KAFKA_BOOTSTRAP_SERVERS"

# Hears one-line notes while a backend is chosen or started (jars resolved, an image pulled).
Progress = Callable[[str], None]


class KafkaBackendError(RuntimeError):
    """A Kafka test backend was misconfigured or could not be started."""


class KafkaImageUnavailableError(KafkaBackendError):
    """The container engine answers but cannot provide the Kafka image: with
    ``KAFKA_BACKEND=testcontainers`` no integration test can run, so the run stops."""


def _still_running() -> str | None:
    return None


@dataclass(frozen=True)
class KafkaBackend:
    """A running broker that tests can connect to."""

    name: str
    bootstrap_servers: str
    description: str
    # The broker's process, for the backends that run one as a child of this process.
    pid: int | None = None
    # None while the broker runs; once it has exited, what a failing test should show: the
    # exit code and the broker's last log lines. A poll, cheap enough to call per test.
    exit_report: Callable[[], str | None] = field(default=_still_running, repr=False, compare=False)


def print_progress(message: str) -> None:
    """The default :data:`Progress`: one line on stderr, at once."""
    print(message, file=sys.stderr, flush=True)
