"""Run the pipeline in a thread, as `run` runs until Ctrl-C, and stop it as a signal would."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._application.run.run_command import (
    RunRequest,
    RunSummary,
    run_pipeline,
)
from pyspark_kafka_upgrade._core.settings import (
    Settings,
)

# A stop lets the batch in flight commit first; on 2 cores a batch can take a while.
STOP_TIMEOUT_S = 300


@dataclass
class BackgroundRun:
    """A run in progress; ``outcome`` holds its summary, or its error, once it has ended."""

    outcome: list[RunSummary | BaseException] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        return bool(self.outcome)

    def summary(self) -> RunSummary:
        """How the run ended; its error, if it failed, is raised here in the test's thread."""
        assert self.outcome, "the run has not ended"
        ended = self.outcome[0]
        if isinstance(ended, BaseException):
            raise ended
        return ended


@contextmanager
def running(settings: Settings, spark: SparkSession) -> Iterator[BackgroundRun]:
    """Run until stopped; on leaving, request the stop and wait for the run to end."""
    stop = threading.Event()
    request = RunRequest(settings=settings, stop=stop, echo=lambda _: None)
    run = BackgroundRun()

    def target() -> None:
        try:
            run.outcome.append(run_pipeline(request, spark))
        except BaseException as error:  # handed to the test's thread by summary()
            run.outcome.append(error)

    runner = threading.Thread(target=target, name="pipeline run")
    runner.start()
    try:
        yield run
    finally:
        stop.set()
        runner.join(timeout=STOP_TIMEOUT_S)
    assert not runner.is_alive(), f"the run did not stop within {STOP_TIMEOUT_S} s of the request"
