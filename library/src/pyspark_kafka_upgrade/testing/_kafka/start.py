"""Starting the chosen Kafka test backend, or connecting to an external one, until it answers.

The ``apache`` and ``noida`` brokers are killed by the kernel if this process dies, and also
if the *thread* that started them ends (Linux's parent-death signal follows the thread):
start them from a thread that outlives their use, such as the main thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager

from pyspark_kafka_upgrade.testing._kafka.apache import apache_backend
from pyspark_kafka_upgrade.testing._kafka.apache_runtime import apache_problem
from pyspark_kafka_upgrade.testing._kafka.backend import (
    BACKEND_ENV_VAR,
    BOOTSTRAP_ENV_VAR,
    KafkaBackend,
    KafkaBackendError,
    Progress,
    print_progress,
)
from pyspark_kafka_upgrade.testing._kafka.choice import resolve_backend_choice
from pyspark_kafka_upgrade.testing._kafka.clients import wait_for_broker
from pyspark_kafka_upgrade.testing._kafka.container import testcontainers_backend
from pyspark_kafka_upgrade.testing._kafka.image import image_problem
from pyspark_kafka_upgrade.testing._kafka.noida import noida_backend

Starter = Callable[[Mapping[str, str]], AbstractContextManager[KafkaBackend]]


@contextmanager
def start_kafka_backend(
    choice: str | None = None, progress: Progress | None = None
) -> Iterator[KafkaBackend]:
    """Start (or connect to) the chosen broker, wait until it answers, and stop it on exit.

    ``choice`` overrides ``KAFKA_BACKEND``; ``None`` reads it from the environment.
    ``progress`` hears one-line notes (jars being resolved, a backend auto passed over);
    the default prints them on stderr.
    """
    say = progress or print_progress
    env: dict[str, str] = dict(os.environ)
    if choice is not None:
        env[BACKEND_ENV_VAR] = choice
    resolved = resolve_backend_choice(
        env,
        apache_unavailable=lambda probe_env: apache_problem(probe_env, say),
        image_unavailable=lambda probe_env: image_problem(probe_env, say),
    )
    for note in resolved.passed_over:
        say(note)
    starters: dict[str, Starter] = {
        "external": _external_backend,
        "testcontainers": lambda container_env: testcontainers_backend(container_env, say),
        "apache": lambda apache_env: apache_backend(apache_env, say),
        "noida": noida_backend,
    }
    with starters[resolved.name](env) as backend:
        wait_for_broker(backend)
        yield backend


@contextmanager
def _external_backend(env: Mapping[str, str]) -> Iterator[KafkaBackend]:
    bootstrap = env.get(BOOTSTRAP_ENV_VAR, "").strip()
    if not bootstrap:
        raise KafkaBackendError(
            f"{BACKEND_ENV_VAR}=external needs {BOOTSTRAP_ENV_VAR} (e.g. localhost:9092); "
            "it is not set"
        )
    yield KafkaBackend("external", bootstrap, f"existing cluster at {bootstrap}")
