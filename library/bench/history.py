"""The history picture: each figure's ratio over the full runs kept in bench/results/."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bench.record import BenchRecordError, BenchRun, Figure


def load(results: Path) -> list[BenchRun]:
    """Every full run's record, oldest first; a file that does not read names itself."""
    runs = []
    for path in sorted(results.glob("*-full.json")):
        try:
            runs.append(BenchRun.from_json(path.read_text(encoding="utf-8")))
        except BenchRecordError as error:
            raise BenchRecordError(f"{path}: {error}") from None
    return sorted(runs, key=lambda run: run.started_at)


def series_by_key(runs: list[BenchRun]) -> dict[str, list[tuple[str, Figure]]]:
    """Each figure's key, with (when, figure) for every run that measured it."""
    found: dict[str, list[tuple[str, Figure]]] = {}
    for run in runs:
        for figure in run.figures():
            found.setdefault(figure.key, []).append((run.started_at, figure))
    return found


def draw(runs: list[BenchRun], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = series_by_key(runs)
    # One x position per run, shared by every panel: a figure a run left out leaves a gap.
    position = {run.started_at: index for index, run in enumerate(runs)}
    labels = [_when(run.started_at) for run in runs]
    columns = 2
    rows = max(1, -(-len(found) // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(11, 2.6 * rows), squeeze=False)
    for ax, (key, points) in zip(axes.flat, sorted(found.items()), strict=False):
        xs = [position[when] for when, _ in points]
        ratios = [point.ratio for _, point in points]
        medians = [r.median for r in ratios]
        spread = [
            [m - r.min for m, r in zip(medians, ratios, strict=True)],
            [r.max - m for m, r in zip(medians, ratios, strict=True)],
        ]
        ax.errorbar(xs, medians, yerr=spread, marker="o", capsize=3, label="median, min to max")
        target = points[-1][1].target
        ax.axhline(target.value, color="tab:red", linestyle="--", label=f"target {target}")
        label = textwrap.shorten(points[-1][1].label, 70, placeholder="...")
        ax.set_title(f"{key}\n{label}", fontsize=7)
        ax.set_xlim(-0.5, len(runs) - 0.5)
        ax.set_xticks(range(len(runs)), labels, fontsize=7, rotation=30)
        ax.tick_params(axis="y", labelsize=7)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(found) :]:
        ax.axis("off")
    figure.suptitle("Benchmark ratios over time (make bench); dashed: the target", fontsize=10)
    figure.tight_layout(rect=(0, 0, 1, 0.98))
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=80)
    plt.close(figure)


def _when(started_at: str) -> str:
    """'2026-11-27T07:47:24+00:00' as '11-27 07:47': runs of one day stay apart."""
    return f"{started_at[5:10]} {started_at[11:16]}"
