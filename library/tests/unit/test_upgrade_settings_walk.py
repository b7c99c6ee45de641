"""`upgrade plan` reads the world in one gather step: followed as data, its settings pass
through any one module of the package at most twice (issue 22: the walk used to climb back
to higher layers 14 times)."""

from __future__ import annotations

import pyspark_kafka_upgrade.testing._fake_world as fake
import support.settings_walk as walk
from pyspark_kafka_upgrade._application.upgrade.commands import plan_command

MAX_VISITS = 2


def test_upgrade_plan_visits_each_module_with_the_settings_at_most_twice(
    world: fake.World,
) -> None:
    settings = world.settings(fake.VERSION_2)
    with walk.traced() as calls:
        plan_command(settings, as_json=True, accept_data_loss=False, progress=lambda _: None)
    module, count = walk.most_visited(calls)
    print(f"settings walk ({len(walk.visits(calls))} visits): {walk.describe(calls)}")
    assert "_application.upgrade.gather" in calls, "the tracer missed the gather step"
    assert count <= MAX_VISITS, f"{module} is visited {count} times: {walk.describe(calls)}"
    # The reasoning is reached with facts, never with the settings.
    assert not [call for call in calls if call.startswith("_core.planner.")], walk.describe(calls)
