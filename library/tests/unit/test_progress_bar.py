"""The progress bar over a long Spark job: nothing for a short one, task counts otherwise."""

from __future__ import annotations

import io
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from pyspark_kafka_upgrade._adapters.spark import progress_bar
from pyspark_kafka_upgrade.testing._waiting import wait_until


@dataclass
class Stage:
    numCompletedTasks: int
    numTasks: int


class Tracker:
    def __init__(self) -> None:
        self.stages = {7: Stage(3, 8)}

    def getActiveStageIds(self) -> list[int]:
        return list(self.stages)

    def getStageInfo(self, stage_id: int) -> Stage | None:
        return self.stages.get(stage_id)


def fake_spark(tracker: Tracker) -> Any:
    return SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_bar, "_FIRST_AFTER_S", 0.0)
    monkeypatch.setattr(progress_bar, "_EVERY_S", 0.01)
    monkeypatch.setattr(progress_bar, "_LINE_EVERY_S", 0.0)


@pytest.mark.usefixtures("quick")
def test_a_long_job_shows_its_tasks_done_out_of_all() -> None:
    out = io.StringIO()
    with progress_bar.job_progress(fake_spark(Tracker()), "verify", out=out):
        wait_until(lambda: "3/8 tasks" in out.getvalue(), timeout=5, message="no progress line")
    line = out.getvalue().splitlines()[0]
    # 3 of 8 tasks: 11 of 30 marks filled (30 * 3 // 8).
    assert line == "verify: [" + "#" * 11 + "." * 19 + "] 3/8 tasks"


def test_a_short_job_shows_nothing() -> None:
    out = io.StringIO()
    with progress_bar.job_progress(fake_spark(Tracker()), "verify", out=out):
        pass  # over long before the first _FIRST_AFTER_S seconds
    assert out.getvalue() == ""


@pytest.mark.usefixtures("quick")
def test_switched_off_it_never_looks_at_spark() -> None:
    with progress_bar.job_progress(object(), "verify", enabled=False):  # type: ignore[arg-type]
        pass
