"""The benchmarks' results file: a typed record that reads back what it wrote."""

from __future__ import annotations

import json

import pytest
from bench.record import (
    FORMAT_VERSION,
    BenchRecordError,
    BenchRun,
    Figure,
    Outcome,
    Series,
    Target,
)

from support.bench_runs import ENVIRONMENT

WITHIN_10_PERCENT = Target("<=", 1.1)


def figure(ratio: tuple[float, ...], target: Target = WITHIN_10_PERCENT) -> Figure:
    return Figure(
        "upgrade.downtime.python",
        "downtime: upgrade ÷ plain restart (pykafka)",
        Series(ratio),
        target,
        {"plain": Series((12.5, 13.0), "s")},
    )


def a_run(*outcomes: Outcome) -> BenchRun:
    return BenchRun("2026-11-27T07:00:00+00:00", "full", ENVIRONMENT, outcomes)


def test_a_run_reads_back_as_it_was_written() -> None:
    run = a_run(
        Outcome("upgrade", "ok", 61.5, (figure((1.02, 1.08, 0.97)),), sizes={"rounds": 3}),
        Outcome("scan", "crashed", 2.0, problems=("KeyError: 'old_end_offset'",)),
    )

    assert BenchRun.from_json(run.to_json()) == run
    assert json.loads(run.to_json())["format_version"] == FORMAT_VERSION


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[]", "not a benchmark run: the JSON is not an object"),
        ('{"format_version": 99}', "format version 99; this harness reads version 1"),
        ('{"format_version": 1, "mode": "full"}', "not a benchmark run: KeyError('started_at')"),
    ],
)
def test_a_file_that_is_no_run_of_this_format_is_refused_in_one_line(
    text: str, message: str
) -> None:
    with pytest.raises(BenchRecordError) as raised:
        BenchRun.from_json(text)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("target", "ratio", "met"),
    [
        (Target("<=", 1.1), 1.1, True),
        (Target("<=", 1.1), 1.11, False),
        (Target(">=", 1.0), 1.0, True),
        (Target(">=", 1.0), 0.99, False),
        (Target("<", 1.0), 1.0, False),
        (Target("<", 1.0), 0.99, True),
    ],
)
def test_a_target_is_met_on_its_side_of_the_value(target: Target, ratio: float, met: bool) -> None:
    assert target.met(ratio) is met


def test_a_figure_is_judged_on_the_median_of_its_rounds() -> None:
    # One slow round out of three does not make a regression on a shared machine.
    assert figure((1.0, 1.05, 1.9)).met
    assert not figure((1.0, 1.2, 1.3)).met


def test_a_series_gives_its_median_min_and_max_and_needs_a_value() -> None:
    series = Series((3.0, 1.0, 2.0, 10.0))

    assert (series.median, series.min, series.max) == (2.5, 1.0, 10.0)
    with pytest.raises(BenchRecordError):
        Series(())


def test_crashes_and_wrong_results_fail_a_run_and_missed_targets_do_not() -> None:
    missed = Outcome("source", "ok", 1.0, (figure((2.0,)),))

    assert not a_run(missed).failed
    assert a_run(missed, Outcome("upgrade", "wrong", 1.0, problems=("a window twice",))).failed
    assert a_run(Outcome("scan", "crashed", 1.0, problems=("OSError",))).failed
