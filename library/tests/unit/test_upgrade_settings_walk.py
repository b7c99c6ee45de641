"""`upgrade plan` reads the world in one gather step: followed as data, its settings pass
through any one module of the package at most twice (issue 22: the walk used to climb back
to higher layers 14 times)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import pyspark_kafka_upgrade.testing.fake_world as fake
import support.settings_walk as walk
from pyspark_kafka_upgrade.model.scans import Record, ScanRange
from pyspark_kafka_upgrade.query.event_parser import EventParser
from pyspark_kafka_upgrade.upgrade import event_scan
from pyspark_kafka_upgrade.upgrade import gather as gathering
from pyspark_kafka_upgrade.upgrade.commands import plan_command
from pyspark_kafka_upgrade.upgrade.event_scan import EventSource

MAX_VISITS = 2


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> fake.World:
    made = fake.make_world(tmp_path / "world")

    def records(
        source: EventSource, span: ScanRange, parser: EventParser, on_batch: object = None
    ) -> Iterator[Record]:
        yield from made.scan(span.partition, span.start, span.end)

    monkeypatch.setattr(gathering, "open_broker", lambda settings: made.broker)
    monkeypatch.setattr(event_scan, "event_times", records)
    return made


def test_upgrade_plan_visits_each_module_with_the_settings_at_most_twice(
    world: fake.World,
) -> None:
    settings = world.settings(fake.VERSION_2)
    with walk.traced() as calls:
        plan_command(settings, as_json=True, accept_data_loss=False, progress=lambda _: None)
    module, count = walk.most_visited(calls)
    print(f"settings walk ({len(walk.visits(calls))} visits): {walk.describe(calls)}")
    assert "upgrade.gather" in calls, "the tracer missed the gather step"
    assert count <= MAX_VISITS, f"{module} is visited {count} times: {walk.describe(calls)}"
    # The reasoning is reached with facts, never with the settings.
    assert not [call for call in calls if call.startswith("planner.")], walk.describe(calls)
