"""The one table a benchmark run prints."""

from __future__ import annotations

from bench.record import BenchRun, Figure, Outcome, Series, Target
from bench.table import number, render

from support.bench_runs import ENVIRONMENT


def run_of(*outcomes: Outcome) -> BenchRun:
    return BenchRun("2026-11-27T07:00:00+00:00", "quick", ENVIRONMENT, outcomes)


def test_each_figure_is_a_row_with_its_spread_target_and_values() -> None:
    figure = Figure(
        "listener.sqlite",
        "batch time with the ledger (sqlite) ÷ without",
        Series((1.01, 0.99, 1.05)),
        Target("<=", 1.02),
        {"plain": Series((0.8, 0.82, 0.79), "s"), "sqlite": Series((0.81, 0.8, 0.83), "s")},
    )

    text = render(run_of(Outcome("listener", "ok", 30.0, (figure,))))

    row = next(line for line in text.splitlines() if line.startswith("listener"))
    assert row.split() == [
        *["listener", "batch", "time", "with", "the", "ledger", "(sqlite)", "÷", "without"],
        "1.010",
        "0.990-1.050",
        "3",
        "≤",
        "1.02",
        "yes",
        *["plain", "0.8", "s", "·", "sqlite", "0.81", "s"],
    ]
    assert "targets: all 1 met" in text
    assert "2 cores, load 0.50" in text and "Kafka 4.4.0 (apache)" in text


def test_a_missed_target_says_no_and_is_named_but_not_a_failure() -> None:
    slow = Figure(
        "source.pykafka_over_builtin", "pykafka ÷ builtin", Series((0.8,)), Target(">=", 1.0)
    )

    text = render(run_of(Outcome("source", "ok", 20.0, (slow,))))

    row = next(line for line in text.splitlines() if line.startswith("source"))
    assert row.split()[-1] == "NO"
    assert "targets missed (1, never fatal): source.pykafka_over_builtin" in text
    assert "FAILED" not in text


def test_a_crash_and_a_wrong_result_get_a_row_and_a_failed_line_each() -> None:
    text = render(
        run_of(
            Outcome("scan", "crashed", 2.0, problems=("KeyError: 'old_end_offset'",)),
            Outcome("upgrade", "wrong", 60.0, problems=("window 10:00 a1 written twice",)),
        )
    )

    assert [
        line.split()[:2] for line in text.splitlines() if "CRASHED" in line or "WRONG" in line
    ] == [
        ["scan", "CRASHED"],
        ["upgrade", "WRONG"],
    ]
    assert "FAILED scan: KeyError: 'old_end_offset'" in text
    assert "FAILED upgrade: window 10:00 a1 written twice" in text


def test_numbers_keep_four_significant_figures_and_group_thousands() -> None:
    assert [number(v) for v in (0, 0.012345, 1.0023, 12.345, 1234.5, 1_234_567)] == [
        "0",
        "0.01235",
        "1.002",
        "12.35",
        "1,234",
        "1,234,567",
    ]
