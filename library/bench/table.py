"""The one table a run prints: each figure's ratio, its spread, its target, and the values.

Pure: it renders a :class:`~bench.record.BenchRun` and reads nothing else.
"""

from __future__ import annotations

from bench.record import BenchRun, Environment, Figure, Series

HEADER = ("benchmark", "figure", "ratio", "min-max", "n", "target", "met", "measured (median)")


def render(run: BenchRun) -> str:
    lines = [describe_environment(run), ""]
    rows: list[tuple[str, ...]] = [HEADER]
    problems: list[str] = []
    for outcome in run.outcomes:
        for figure in outcome.figures:
            rows.append(_row(outcome.benchmark, figure))
        if outcome.status != "ok":
            rows.append((outcome.benchmark, f"{outcome.status.upper()}", "", "", "", "", "", ""))
            problems += [f"{outcome.benchmark}: {problem}" for problem in outcome.problems]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    missed = [figure.key for figure in run.figures() if not figure.met]
    lines.append("")
    if missed:
        lines.append(f"targets missed ({len(missed)}, never fatal): {', '.join(missed)}")
    else:
        lines.append(f"targets: all {len(run.figures())} met")
    for problem in problems:
        lines.append(f"FAILED {problem}")
    return "\n".join(lines)


def describe_environment(run: BenchRun) -> str:
    env: Environment = run.environment
    return (
        f"bench ({run.mode}) {run.started_at} · {env.cores} cores, load {env.load_1m:.2f}, "
        f"{env.memory_gib:.1f} GiB · Python {env.python} · Spark {env.spark} · Kafka {env.kafka} "
        f"({env.backend}) · connectors {', '.join(env.connectors)} · commit {env.commit}"
    )


def _row(benchmark: str, figure: Figure) -> tuple[str, ...]:
    ratio = figure.ratio
    measured = " · ".join(
        f"{name} {number(series.median)}{_unit(series)}" for name, series in figure.absolute.items()
    )
    return (
        benchmark,
        figure.label,
        f"{ratio.median:.3f}",
        f"{ratio.min:.3f}-{ratio.max:.3f}",
        str(len(ratio.values)),
        str(figure.target),
        "yes" if figure.met else "NO",
        measured,
    )


def _unit(series: Series) -> str:
    return f" {series.unit}" if series.unit else ""


def number(value: float) -> str:
    """Three significant figures, thousands separated: 0.0123, 1.23, 12.3, 12,345."""
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"
