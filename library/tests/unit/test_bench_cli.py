"""`python -m bench`: a run fails on a crash or a wrong result, never on speed."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import cli, history
from bench.kit.context import Benchmark, Context, Result
from bench.record import BenchRun, Figure, Outcome, Series, Target

from support.bench_runs import ENVIRONMENT


def slow(ctx: Context) -> Result:
    # A missed target: reported, never fatal.
    ratio = Series((0.5,) if ctx.quick else (0.5, 0.6))
    return Result((Figure("fake.slow", "fast ÷ slow", ratio, Target(">=", 1.0)),))


def twice(ctx: Context) -> Result:
    return Result((), ("window 10:00 a1 written by generations 1 and 2",))


def broken(ctx: Context) -> Result:
    raise KeyError("old_end_offset")


FAKES = (
    Benchmark("slow", "misses its target", slow, needs_kafka=False),
    Benchmark("twice", "writes a window twice", twice, needs_kafka=False),
    Benchmark("broken", "crashes", broken, needs_kafka=False),
)


@pytest.fixture(autouse=True)
def fake_benchmarks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "BENCHMARKS", FAKES)


def test_a_crash_or_a_wrong_result_fails_the_run_and_every_benchmark_still_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--quick", "--results", str(tmp_path)]) == 1

    out = capsys.readouterr().out
    assert "FAILED twice: window 10:00 a1 written by generations 1 and 2" in out
    assert "FAILED broken: KeyError: 'old_end_offset'" in out
    assert "targets missed (1, never fatal): fake.slow" in out
    [path] = tmp_path.glob("*-quick.json")
    run = BenchRun.from_json(path.read_text())
    assert [(o.benchmark, o.status) for o in run.outcomes] == [
        ("slow", "ok"),
        ("twice", "wrong"),
        ("broken", "crashed"),
    ]
    assert f"results: {path}" in out


def test_a_missed_target_alone_does_not_fail_the_run(tmp_path: Path) -> None:
    assert cli.main(["run", "--only", "slow", "--results", str(tmp_path)]) == 0
    [path] = tmp_path.glob("*-full.json")
    assert BenchRun.from_json(path.read_text()).figures()[0].ratio.values == (0.5, 0.6)


def test_an_unknown_benchmark_is_a_usage_error_that_lists_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["run", "--only", "slow,nope"])

    assert stopped.value.code == 2
    assert "--only: no benchmark nope; known: slow, twice, broken" in capsys.readouterr().err


def a_full_run(started_at: str, ratio: float) -> BenchRun:
    figure = Figure("fake.slow", "fast ÷ slow", Series((ratio,)), Target(">=", 1.0))
    return BenchRun(started_at, "full", ENVIRONMENT, (Outcome("slow", "ok", 1.0, (figure,)),))


def test_the_report_draws_every_full_run_oldest_first(tmp_path: Path) -> None:
    for run in (
        a_full_run("2026-11-28T08:00:00+00:00", 0.9),
        a_full_run("2026-11-27T08:00:00+00:00", 0.8),
    ):
        cli.write(run, tmp_path)
    cli.write(BenchRun("2026-11-29T08:00:00+00:00", "quick", ENVIRONMENT, ()), tmp_path)
    picture = tmp_path / "history.png"

    assert cli.main(["report", "--results", str(tmp_path), "--out", str(picture)]) == 0

    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [run.started_at[:10] for run in history.load(tmp_path)] == ["2026-11-27", "2026-11-28"]


def test_the_report_says_why_it_draws_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["report", "--results", str(tmp_path)]) == 1
    assert f"no full run in {tmp_path}; `make bench` makes one" in capsys.readouterr().err

    (tmp_path / "2026-11-27T080000Z-full.json").write_text("{")
    assert cli.main(["report", "--results", str(tmp_path)]) == 1
    assert "2026-11-27T080000Z-full.json: not JSON" in capsys.readouterr().err
