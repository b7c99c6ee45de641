"""One Delta table holds every generation, so its location may not change at an upgrade:
`upgrade plan` refuses a changed ``sink.table_location`` in one line naming both places,
with exit code 2, and writes nothing. A catalog name may change; it is not the table."""

from __future__ import annotations

from pathlib import Path

import pytest

import pyspark_kafka_upgrade.testing._fake_world as fake
from pyspark_kafka_upgrade._application.upgrade import gather as gathering
from pyspark_kafka_upgrade._core.planner.decide import batch_level
from pyspark_kafka_upgrade._domain.records.advice import Verdict
from pyspark_kafka_upgrade._domain.records.record_errors import TableMovedError
from support.example import main

DELTA = "sink.format=delta"


def delta_world(tmp_path: Path, *settings: str) -> fake.World:
    """Generation 1 after 4 batches into a Delta table (the table's log is not written: the
    plan reads only its generation's last transaction there, none)."""
    return fake.make_world(tmp_path / "world", ran_with=(DELTA, *settings))


def test_a_changed_table_location_is_refused_naming_both_places(tmp_path: Path) -> None:
    old, new = tmp_path / "tables" / "counts", tmp_path / "elsewhere" / "counts"
    world = delta_world(tmp_path, f"sink.table_location={old}")
    facts = fake.facts_of(world, fake.VERSION_2, f"sink.table_location={new}")

    with pytest.raises(TableMovedError) as caught:
        batch_level(facts, accept_data_loss=False)

    assert str(caught.value) == (
        f"sink.table_location changed from {old} to {new}: one table holds every generation, "
        f"and generation 1 and those before it wrote to {old}. Keep sink.table_location = "
        f"'{old}' (readers can find the table by sink.table_name); moving the table is not an "
        "upgrade this version makes"
    )


def test_leaving_the_default_location_for_another_is_a_move_too(tmp_path: Path) -> None:
    world = delta_world(tmp_path)
    facts = fake.facts_of(world, fake.VERSION_2, f"sink.table_location={tmp_path / 'x'}")
    with pytest.raises(TableMovedError, match=r"from \S+/world/pipeline/output/table to "):
        batch_level(facts, accept_data_loss=False)


@pytest.mark.parametrize(
    "kept",
    [
        (),  # the default location, written out or not
        ("sink.table_name=analytics.page_view_counts",),  # a name is not the table
    ],
)
def test_the_same_location_plans_as_before(tmp_path: Path, kept: tuple[str, ...]) -> None:
    location = f"sink.table_location={tmp_path / 'tables' / 'counts'}"
    world = delta_world(tmp_path, location)
    plan = fake.plan_of(world, fake.facts_of(world, fake.VERSION_2, location, *kept))
    assert plan.advice.verdict is Verdict.NEEDS_NEW_CHECKPOINT
    assert plan.restart_offsets == {(fake.TOPIC, 0): 20, (fake.TOPIC, 1): 20}
    assert plan.to_signature is not None
    assert plan.to_signature.sink_path == str(tmp_path / "tables" / "counts")


def test_from_files_to_a_table_is_no_move(tmp_path: Path) -> None:
    # Each generation of a file sink is read in its own directory: not the table's concern.
    world = fake.make_world(tmp_path / "world")
    facts = fake.facts_of(world, fake.VERSION_2, DELTA, f"sink.table_location={tmp_path / 't'}")
    assert batch_level(facts, accept_data_loss=False).restart.watermark_ms == fake.W


def test_the_cli_refuses_in_one_line_with_exit_code_2_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "tables" / "counts", tmp_path / "elsewhere"
    world = delta_world(tmp_path, f"sink.table_location={old}")
    monkeypatch.setattr(gathering, "open_broker", lambda settings: world.broker)
    before = world.snapshot()
    options = world.overrides(fake.VERSION_2, f"sink.table_location={new}")
    out = world.root / "upgrade.json"

    code = main(["upgrade", "plan", *(f"--set={option}" for option in options), f"--out={out}"])

    err = capsys.readouterr().err.strip()
    assert code == TableMovedError.exit_code == 2
    assert err.count("\n") == 0, err
    assert f"sink.table_location changed from {old} to {new}: one table holds" in err
    assert not out.exists()
    assert world.snapshot() == before
