"""`upgrade plan --plot` and `upgrade show --plot`: a real PNG or SVG of the plan, drawn from
the ledger, whose data holds the plan's restart offsets; and one-line refusals."""

from __future__ import annotations

import builtins
import dataclasses
import json
import xml.etree.ElementTree as ElementTree
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import pyspark_kafka_upgrade.testing._fake_world as fake
from pyspark_kafka_upgrade._adapters.plot.matplotlib_draw import (
    PlotFileError,
    PlotUnavailableError,
    check_plot_path,
    draw_figure,
    write_picture,
)
from pyspark_kafka_upgrade._application.upgrade import picture as upgrade_picture
from pyspark_kafka_upgrade._core.picture.layout import plan_picture
from pyspark_kafka_upgrade._core.picture.placement import PANEL_POINTS
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from support.example import main
from support.pictures import (
    BATCHES,
    CROWDED_PLANS,
    T_MIN,
    batches_of,
    two_hundred_partitions,
)
from support.plans import sample_plan

SVG = "{http://www.w3.org/2000/svg}"


def cli(world: fake.World, *arguments: str) -> int:
    options = [f"--set={option}" for option in world.overrides(fake.VERSION_2)]
    return main([*arguments[:2], *options, *arguments[2:]])


def png_facts(path: Path) -> tuple[tuple[int, int], dict[str, Any]]:
    with Image.open(path) as image:
        image.verify()  # a broken or truncated PNG raises here
    with Image.open(path) as image:
        return image.size, json.loads(image.text["Description"])  # type: ignore[attr-defined]


def svg_texts(path: Path) -> list[str]:
    root = ElementTree.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return ["".join(node.itertext()) for node in root.iter(f"{SVG}text")]


def drawn_extents(plan: UpgradePlan, batches: list[Any]) -> list[dict[str, Any]]:
    """Per panel, as matplotlib drew it (display units): the plotting area, the box patches,
    the labels, and the text under it; and the header's text and legend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.patches import Rectangle

    picture = plan_picture(plan, batches, {("t", p): 0 for p in range(200)})
    figure = draw_figure(picture)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # type: ignore[no-untyped-call]
    renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
    header, legend, *rest = figure.axes
    panels = []
    for index, _ in enumerate(picture.panels):
        axes, _windows, notes = rest[3 * index : 3 * index + 3]
        boxes = [
            patch.get_window_extent(renderer)
            for patch in axes.patches
            if isinstance(patch, Rectangle) and (patch.get_gid() or "").startswith("batch-")
        ]
        panels.append(
            {
                "area": axes.get_window_extent(renderer),
                "boxes": boxes,
                "labels": [(t.get_text(), t.get_window_extent(renderer)) for t in axes.texts],
                "notes": [t.get_window_extent(renderer) for t in notes.texts],
                "dpi": figure.dpi,
            }
        )
    drawn_legend = legend.get_legend()
    assert drawn_legend is not None
    panels.append(
        {
            "header": header.texts[0].get_window_extent(renderer),
            "legend": drawn_legend.get_window_extent(renderer),
        }
    )
    return panels


CROWDED = CROWDED_PLANS


@pytest.mark.parametrize(("plan", "batches"), CROWDED.values(), ids=CROWDED.keys())
def test_drawn_labels_cover_no_other_label_no_box_and_no_header_text(
    plan: UpgradePlan, batches: list[Any]
) -> None:
    *panels, header = drawn_extents(plan, batches)
    assert not header["header"].overlaps(header["legend"]), "the reasoning runs into the legend"
    for panel in panels:
        area = panel["area"]
        # The layout placed its labels on a panel of PANEL_POINTS: the drawn one is larger.
        width_pt, height_pt = (side / panel["dpi"] * 72 for side in (area.width, area.height))
        assert width_pt >= PANEL_POINTS[0] and height_pt >= PANEL_POINTS[1], (width_pt, height_pt)
        assert len(panel["boxes"]) >= 3
        for text, extent in panel["labels"]:
            assert area.contains(extent.x0, extent.y0) and area.contains(extent.x1, extent.y1), text
            assert not any(extent.overlaps(box) for box in panel["boxes"]), text
        for (first, one), (second, other) in combinations(panel["labels"], 2):
            assert not one.overlaps(other), (first, second)
        # The reason is under the panel, not on it.
        assert all(note.y1 < area.y0 for note in panel["notes"])


def test_a_small_plan_renders_to_a_valid_png_with_its_restart_offsets(tmp_path: Path) -> None:
    plan = sample_plan()
    written = write_picture(plan_picture(plan, BATCHES), tmp_path / "plan.png")
    (width, height), described = png_facts(written)
    assert 1000 <= width <= 2000 and 500 <= height <= 1200, (width, height)
    assert described["restart_offsets"] == plan.starting_offsets
    assert described["old_end_offsets"] == '{"t":{"0":40}}'


def test_an_svg_keeps_its_labels_as_text(tmp_path: Path) -> None:
    texts = svg_texts(write_picture(plan_picture(sample_plan(), BATCHES), tmp_path / "plan.svg"))
    assert any("restart 20" in text for text in texts), texts
    assert any("old end 40" in text for text in texts)
    assert any(text.startswith("W 10:24:00") for text in texts)


def test_two_hundred_partitions_stay_readable(tmp_path: Path) -> None:
    plan = two_hundred_partitions()
    picture = plan_picture(plan, batches_of(200))
    (width, height), described = png_facts(write_picture(picture, tmp_path / "many.png"))
    # Three panels and a summary: a page, not a poster of 200 panels.
    assert width <= 2000 and height <= 2000, (width, height)
    assert described["restart_offsets"] == plan.starting_offsets
    texts = svg_texts(write_picture(picture, tmp_path / "many.svg"))
    assert any(text.startswith("200 partitions, 197 not drawn") for text in texts), texts
    for number in (7, 99, 150):
        assert any(text.startswith(f"t partition {number}: restarts") for text in texts)
    assert texts.count("batch 3") == 3, "each drawn partition shows its batches"


@pytest.mark.parametrize(
    "change",
    [
        {"watermark_ms": 0},
        {"replay_filter": ReplayFilter(event_time_from_ms=T_MIN)},
        {"partitions": (dataclasses.replace(sample_plan().partitions[0], restart_offset=-2),)},
        {
            "partitions": (
                PartitionRestart("t", 0, None, None, 40, RestartKind.UNSUBSCRIBED, "gone"),
            )
        },
    ],
    ids=["watermark-not-moved", "window-changed", "restart-earliest", "unsubscribed"],
)
def test_unusual_plans_render_with_what_makes_them_unusual(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    plan = dataclasses.replace(sample_plan(), **change)
    texts = svg_texts(write_picture(plan_picture(plan, BATCHES), tmp_path / "plan.svg"))
    joined = "\n".join(texts)
    expected = {
        "watermark-not-moved": "W = not yet set (batch 3): no window was written",
        "window-changed": "E 10:20:00: new windows from here",
        "restart-earliest": "restarts at earliest",
        "unsubscribed": "not read again",
    }
    assert sum(word in joined for word in expected.values()) == 1, joined
    if plan.watermark_ms == 0:
        assert "batch 3" in texts, "the batches stay in the picture when W has not moved"


@pytest.mark.parametrize("name", ["plan.pdf", "plan", "missing/plan.png"])
def test_a_file_the_renderer_cannot_write_is_refused_first(tmp_path: Path, name: str) -> None:
    with pytest.raises(PlotFileError, match="--plot"):
        check_plot_path(tmp_path / name)


def test_without_the_plot_extra_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] == "matplotlib":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(PlotUnavailableError, match=r"pyspark-kafka-upgrade\[plot\]"):
        check_plot_path(tmp_path / "plan.png")


def test_plan_and_show_draw_the_plan_from_the_ledger(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_file, picture = world.root / "upgrade.json", world.root / "upgrade.png"
    assert cli(world, "upgrade", "plan", "--out", str(plan_file), "--plot", str(picture)) == 0
    out = capsys.readouterr().out
    assert f"Picture of the plan written to {picture}" in out
    plan = UpgradePlan.from_json(json.loads(plan_file.read_text()))
    _, described = png_facts(picture)
    assert plan.restart_offsets == {(fake.TOPIC, 0): 20, (fake.TOPIC, 1): 20}
    assert described["restart_offsets"] == plan.starting_offsets

    drawing = world.root / "review.svg"
    assert cli(world, "upgrade", "show", str(plan_file), "--plot", str(drawing)) == 0
    assert f"Picture of the plan written to {drawing}" in capsys.readouterr().out
    texts = svg_texts(drawing)
    # The ledger's four batches, drawn from the old generation's records.
    assert {"batch 1", "batch 2", "batch 3"} <= set(texts), texts
    assert any("restart 20" in text for text in texts)


def test_a_picture_that_fails_to_draw_costs_a_line_not_the_plan(
    world: fake.World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(picture: object, path: Path) -> Path:
        raise RuntimeError("no fonts")

    monkeypatch.setattr(upgrade_picture, "write_picture", broken)
    plan_file, picture = world.root / "upgrade.json", world.root / "upgrade.png"
    assert cli(world, "upgrade", "plan", "--out", str(plan_file), "--plot", str(picture)) == 0
    out = capsys.readouterr().out
    assert "No picture: matplotlib failed (RuntimeError: no fonts)" in out
    assert UpgradePlan.from_json(json.loads(plan_file.read_text())).restart_offsets
    assert not picture.exists()


def test_show_plot_refuses_a_plan_of_another_pipeline(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_file = world.root / "upgrade.json"
    assert cli(world, "upgrade", "plan", "--out", str(plan_file)) == 0
    capsys.readouterr()
    options = [f"--set={option}" for option in world.overrides(fake.VERSION_2)]
    other = [*options, "--set=pipeline.name=another"]
    drawing = world.root / "plan.png"
    assert main(["upgrade", "show", *other, str(plan_file), "--plot", str(drawing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is a plan for pipeline" in err, err
    assert not drawing.exists()


def test_a_bad_plot_name_is_refused_before_planning(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_file = world.root / "upgrade.json"
    assert cli(world, "upgrade", "plan", "--out", str(plan_file), "--plot", "plan.gif") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--plot plan.gif: the picture is a .png or a .svg" in err
    assert not plan_file.exists()


def test_no_picture_when_no_upgrade_is_needed(
    world: fake.World, capsys: pytest.CaptureFixture[str]
) -> None:
    picture = world.root / "upgrade.png"
    options = [f"--set={option}" for option in world.overrides()]
    assert main(["upgrade", "plan", *options, "--plot", str(picture)]) == 0
    assert "no picture written" in capsys.readouterr().out
    assert not picture.exists()
