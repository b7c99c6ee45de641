import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pyspark_kafka_upgrade._application import backfill as backfill_command
from pyspark_kafka_upgrade._application import config_show as configuration
from pyspark_kafka_upgrade._application import verify as verify_command
from pyspark_kafka_upgrade._application.checkpoint_show import show as checkpoint_command
from pyspark_kafka_upgrade._application.upgrade import commands as upgrade_commands
from pyspark_kafka_upgrade._core.settings import (
    Settings,
)
from pyspark_kafka_upgrade._domain.records.verification import Status
from pyspark_kafka_upgrade._domain.values.outcome import Outcome
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.cli import console
from pyspark_kafka_upgrade.cli._parser import build_parser
from support.example import PROG, main


@pytest.fixture(autouse=True)
def _no_local_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_help_lists_the_commands_and_teaches_the_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "config" in out
    assert "settings are layered" in out
    assert "--set section.key=value" in out


def test_config_show_prints_values_and_their_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--set", "kafka.bootstrap_servers=broker:9092", "config", "show"]) == 0
    out = capsys.readouterr().out
    assert '"broker:9092"' in out
    assert "(--set)" in out
    assert "(package defaults)" in out


def test_config_show_json_is_machine_readable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["kafka"]["topics"] == ["page-views"]
    assert document["ledger"]["store"] == "sqlite"


def test_a_bad_value_is_one_line_and_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--set", "window.duration=soon", "config", "show"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert "error: window.duration = 'soon' (from --set)" in lines[0]


def test_a_missing_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    assert "required: COMMAND" in capsys.readouterr().err


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.split() == [PROG, PROJECT.version]


# --config and --set anywhere: the settings a command gets do not depend on where they went.

SERVERS = "kafka.bootstrap_servers=broker:9092"


def _settings_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(argv) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_set_before_or_after_the_command_gives_the_same_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _settings_json(["--set", SERVERS, "config", "show", "--json"], capsys)
    assert before["kafka"]["bootstrap_servers"] == "broker:9092"
    for argv in (
        ["config", "--set", SERVERS, "show", "--json"],
        ["config", "show", "--set", SERVERS, "--json"],
        ["config", "show", "--json", "--set", SERVERS],
    ):
        assert _settings_json(argv, capsys) == before, argv


def test_every_set_counts_wherever_it_goes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--set", SERVERS, "config", "--set", "pipeline.name=other", "show"]
    document = _settings_json([*argv, "--json", "--set", "pipeline.root=/elsewhere"], capsys)
    assert document["kafka"]["bootstrap_servers"] == "broker:9092"
    assert document["pipeline"]["name"] == "other"
    assert document["pipeline"]["root"] == "/elsewhere"


FIRST = "kafka.bootstrap_servers=first:9092"
SECOND = "kafka.bootstrap_servers=second:9092"


@pytest.mark.parametrize(
    "argv",
    [
        ["--set", FIRST, "--set", SECOND, "config", "show"],
        ["config", "show", "--set", FIRST, "--set", SECOND],
        ["--set", FIRST, "config", "show", "--set", SECOND],
        ["--set", FIRST, "config", "--set", SECOND, "show"],
        ["config", "--set", FIRST, "show", "--set", SECOND],
    ],
    ids=["both-before", "both-after", "before-then-after", "top-then-middle", "middle-then-leaf"],
)
def test_the_later_set_wins(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    document = _settings_json([*argv, "--json"], capsys)
    assert document["kafka"]["bootstrap_servers"] == "second:9092"


@pytest.mark.parametrize("at", [0, 1, 3])
def test_config_works_before_or_after_the_command(
    at: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings_file = tmp_path / "elsewhere.toml"
    settings_file.write_text('[kafka]\nbootstrap_servers = "from-file:9092"\n')
    argv = ["config", "show", "--json"]
    argv[at:at] = ["--config", str(settings_file)]
    assert _settings_json(argv, capsys)["kafka"]["bootstrap_servers"] == "from-file:9092"


@pytest.mark.parametrize(
    "argv",
    [
        ["--config", "a.toml", "--config", "b.toml", "config", "show"],
        ["--config", "a.toml", "config", "show", "--config", "b.toml"],
        ["config", "--config", "a.toml", "show", "--config", "b.toml"],
    ],
)
def test_two_different_config_files_are_a_usage_error(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a.toml", "b.toml"):
        (tmp_path / name).write_text("")
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert "--config" in lines[0]
    assert "a.toml" in lines[0]
    assert "b.toml" in lines[0]


def test_the_same_config_file_twice_is_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.toml").write_text('[kafka]\nbootstrap_servers = "from-file:9092"\n')
    argv = ["--config", "a.toml", "config", "show", "--json", "--config", str(tmp_path / "a.toml")]
    assert _settings_json(argv, capsys)["kafka"]["bootstrap_servers"] == "from-file:9092"


COMMANDS = [
    ["config"],
    ["config", "show"],
    ["run"],
    ["checkpoint"],
    ["checkpoint", "show"],
    ["connector"],
    ["connector", "fetch"],
    ["upgrade"],
    ["upgrade", "plan"],
    ["upgrade", "apply"],
    ["upgrade", "show"],
    ["upgrade", "rollback"],
    ["upgrade", "backfill"],
    ["output"],
    ["output", "show"],
    ["verify"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_help_lists_the_settings_options(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main([*command, "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: {PROG} {' '.join(command)}" in out
    assert "--config FILE" in out
    assert "--set SECTION.KEY=VALUE" in out


# Deeper commands: the handler's target is replaced by a recorder of what it was given.


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[tuple[object, ...], dict[str, object]]] = []

    def __call__(self, *args: object, **kwargs: object) -> str:
        self.calls.append((args, kwargs))
        return "recorded"


@pytest.fixture
def record(monkeypatch: pytest.MonkeyPatch) -> Callable[[object, str], Recorder]:
    def replace(module: object, name: str) -> Recorder:
        recorder = Recorder()
        monkeypatch.setattr(module, name, recorder)
        return recorder

    return replace


def _settings(*overrides: str) -> Settings:
    return configuration.load(PROJECT, None, overrides).settings


ROOT = "pipeline.root=/elsewhere"


@pytest.mark.parametrize(
    "argv",
    [
        ["--set", ROOT, "checkpoint", "show", "cp"],
        ["checkpoint", "--set", ROOT, "show", "cp"],
        ["checkpoint", "show", "--set", ROOT, "cp"],
        ["checkpoint", "show", "cp", "--set", ROOT],
    ],
)
def test_checkpoint_show_gets_the_same_settings_wherever_set_goes(
    argv: list[str], record: Callable[[object, str], Recorder], capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = record(checkpoint_command, "show_checkpoint")
    assert main(argv) == 0
    assert capsys.readouterr().out == "recorded\n"
    expected = {"path": "cp", "generation": None, "sink": None, "as_json": False}
    assert recorder.calls == [((_settings(ROOT),), expected)]
    assert _settings(ROOT) != _settings()


@pytest.mark.parametrize(
    "argv",
    [
        ["--set", ROOT, "upgrade", "plan"],
        ["upgrade", "--set", ROOT, "plan"],
        ["upgrade", "plan", "--set", ROOT],
        ["--set", "pipeline.root=/first", "upgrade", "plan", "--set", ROOT],
    ],
)
def test_upgrade_plan_gets_the_same_settings_wherever_set_goes(
    argv: list[str], record: Callable[[object, str], Recorder]
) -> None:
    recorder = record(upgrade_commands, "plan_command")
    assert main(argv) == 0
    ((settings,), _) = recorder.calls[0]
    assert settings == _settings(ROOT)


NO_HANDOFF: dict[str, object] = {"handoff_at_ms": None}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            [],
            {"as_json": False, "accept_data_loss": False, "scan": True, "out": None, "plot": None}
            | NO_HANDOFF,
        ),
        (
            ["--json"],
            {"as_json": True, "accept_data_loss": False, "scan": True, "out": None, "plot": None}
            | NO_HANDOFF,
        ),
        (
            ["--out", "upgrade.json", "--accept-data-loss", "--no-scan", "--plot", "plan.svg"],
            {
                "as_json": False,
                "accept_data_loss": True,
                "scan": False,
                "out": Path("upgrade.json"),
                "plot": Path("plan.svg"),
            }
            | NO_HANDOFF,
        ),
        (
            ["--handoff-at", "2025-11-22T10:50:00Z"],
            {"as_json": False, "accept_data_loss": False, "scan": True, "out": None, "plot": None}
            | {"handoff_at_ms": 1_763_808_600_000},
        ),
    ],
)
def test_upgrade_plan_passes_its_options(
    options: list[str], expected: dict[str, object], record: Callable[[object, str], Recorder]
) -> None:
    recorder = record(upgrade_commands, "plan_command")
    assert main(["upgrade", "plan", *options]) == 0
    assert recorder.calls == [((_settings(),), expected)]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], {"plan_file": None, "accept_data_loss": False, "scan": True} | NO_HANDOFF),
        (
            ["upgrade.json"],
            {"plan_file": Path("upgrade.json"), "accept_data_loss": False, "scan": True}
            | NO_HANDOFF,
        ),
        (
            ["--accept-data-loss"],
            {"plan_file": None, "accept_data_loss": True, "scan": True} | NO_HANDOFF,
        ),
        (["--no-scan"], {"plan_file": None, "accept_data_loss": False, "scan": False} | NO_HANDOFF),
        (
            ["--handoff-at", "2025-11-22T10:50:00Z"],
            {"plan_file": None, "accept_data_loss": False, "scan": True}
            | {"handoff_at_ms": 1_763_808_600_000},
        ),
    ],
)
def test_upgrade_apply_passes_its_options(
    options: list[str], expected: dict[str, object], record: Callable[[object, str], Recorder]
) -> None:
    recorder = record(upgrade_commands, "apply_command")
    assert main(["upgrade", "apply", *options]) == 0
    assert recorder.calls == [((_settings(),), expected)]


@pytest.mark.parametrize(
    "argv",
    [
        ["upgrade", "apply", "upgrade.json", "--no-scan"],
        ["upgrade", "apply", "--accept-data-loss", "upgrade.json"],
        ["upgrade", "apply", "--no-scan", "upgrade.json", "--accept-data-loss"],
    ],
)
def test_a_plan_file_refuses_the_options_it_already_fixed(
    argv: list[str],
    record: Callable[[object, str], Recorder],
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorder = record(upgrade_commands, "apply_command")
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert recorder.calls == []
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert "upgrade.json" in lines[0]
    assert "plan file already fixed" in lines[0]
    for option in ("--no-scan", "--accept-data-loss"):
        assert (option in lines[0]) == (option in argv), option


@pytest.mark.parametrize(
    ("options", "as_json", "plot"),
    [([], False, None), (["--json"], True, None), (["--plot", "p.png"], False, Path("p.png"))],
)
def test_upgrade_show_passes_the_plan_file(
    options: list[str],
    as_json: bool,
    plot: Path | None,
    record: Callable[[object, str], Recorder],
) -> None:
    recorder = record(upgrade_commands, "show_command")
    assert main(["upgrade", "show", "upgrade.json", *options]) == 0
    assert recorder.calls == [
        ((_settings(), Path("upgrade.json")), {"as_json": as_json, "plot": plot})
    ]


def test_upgrade_show_needs_a_plan_file(
    record: Callable[[object, str], Recorder], capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = record(upgrade_commands, "show_command")
    with pytest.raises(SystemExit) as caught:
        main(["upgrade", "show"])
    assert caught.value.code == 2
    assert recorder.calls == []
    assert "required: PLAN" in capsys.readouterr().err


def test_upgrade_rollback_passes_the_settings(record: Callable[[object, str], Recorder]) -> None:
    recorder = record(upgrade_commands, "rollback_command")
    assert main(["upgrade", "rollback", "--set", ROOT]) == 0
    assert recorder.calls == [((_settings(ROOT),), {})]


@pytest.mark.parametrize("command", [[], ["plan"], ["apply"]], ids=["upgrade", "plan", "apply"])
def test_upgrade_help_teaches_the_reviewed_workflow(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["upgrade", *command, "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert f"{PROG} upgrade plan --out upgrade.json" in out
    assert "upgrade show upgrade.json" in out
    assert f"{PROG} upgrade apply upgrade.json" in out
    assert "refuses if anything moved" in out


def test_upgrade_help_mentions_one_step_apply_and_rollback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["upgrade", "--help"])
    out = capsys.readouterr().out
    assert f"{PROG} run" in out
    assert "plan and apply in one step, printing the plan first" in out
    assert f"{PROG} upgrade rollback" in out


def test_the_console_script_exits_with_the_commands_code(monkeypatch: pytest.MonkeyPatch) -> None:
    # A launcher that ignores return values (Databricks' python_wheel_task) still sees it.
    monkeypatch.setattr("sys.argv", [PROG, "--set", "window.duration=soon", "config", "show"])

    with pytest.raises(SystemExit) as exited:
        console(PROJECT)

    assert exited.value.code == 2


# verify: the statuses in its help, its times as ISO-8601, its exit code from its findings.

# What the help explains, one status a line, as the report names them.
EXPLAINED_STATUSES = ("exact", "lost", "written twice", "different", "late by design", "open")


def _verify_help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as caught:
        main(["verify", "--help"])
    assert caught.value.code == 0
    return capsys.readouterr().out


def test_verify_help_lists_the_statuses_and_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    out = _verify_help(capsys)
    lines = out.splitlines()

    for status in EXPLAINED_STATUSES:
        assert any(line.startswith(f"  {status}  ") for line in lines), status
    assert f"  {PROG} verify --from 2026-11-26T09:00:00Z --to 2026-11-26T12:00:00Z" in lines
    assert "Exit code 0 only when nothing is lost, written twice or different" in out
    assert "ISO-8601, UTC unless they" in out
    # How to choose --from: the default, worked on the demo's numbers, and when to pass one.
    assert "The default --from is the windows\naround the last upgrade" in out
    assert "(W 10:34:40, 10-minute windows, 5-minute delay: from 10:00:00)" in out
    assert "Pass an earlier --from to check older windows too" in out


def test_verify_help_explains_every_status_the_report_can_show(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = _verify_help(capsys).splitlines()

    unexplained = [
        status.value
        for status in Status
        if not any(line.startswith(f"  {status.value}  ") for line in lines)
    ]
    assert unexplained == []


@pytest.mark.parametrize("option", ["--from", "--to"])
def test_verify_refuses_a_time_that_is_not_iso_8601(
    option: str, record: Callable[[object, str], Recorder], capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = record(verify_command, "verify_command")

    with pytest.raises(SystemExit) as caught:
        main(["verify", option, "yesterday"])

    assert caught.value.code == 2
    assert recorder.calls == []
    captured = capsys.readouterr()
    assert captured.out == ""
    errors = [line for line in captured.err.splitlines() if "error:" in line]
    assert errors == [
        f"{PROG} verify: error: argument {option}: 'yesterday' is not an ISO-8601 time; "
        "e.g. 2026-11-26T09:00:00Z or 2026-11-26"
    ]


# 2026-11-26 is 20,783 days after 1970-01-01 (56 x 365 days, 14 leap days, 329 into 2026).
NOV_26_MS = 20_783 * 86_400_000


def test_verify_passes_its_range_generations_and_options(
    record: Callable[[object, str], Recorder],
) -> None:
    recorder = record(verify_command, "verify_command")

    argv = ["verify", "--from", "2026-11-26T10:00:00+01:00", "--to", "2026-11-26T12:00:00"]
    assert main([*argv, "--generation", "2", "3", "--json", "--master", "local[2]"]) == 0

    # 10:00 at +01:00 is 09:00 UTC; 12:00 with no offset is UTC.
    expected = verify_command.VerifyRange(
        from_ms=NOV_26_MS + 9 * 3_600_000, to_ms=NOV_26_MS + 12 * 3_600_000, generations=(2, 3)
    )
    assert recorder.calls == [((_settings(), expected), {"as_json": True, "master": "local[2]"})]


def test_verify_without_options_checks_the_default_range(
    record: Callable[[object, str], Recorder],
) -> None:
    recorder = record(verify_command, "verify_command")

    assert main(["verify"]) == 0

    expected = verify_command.VerifyRange(from_ms=None, to_ms=None, generations=None)
    assert recorder.calls == [((_settings(), expected), {"as_json": False, "master": None})]


@pytest.mark.parametrize("exit_code", [0, 1])
def test_verify_exits_with_its_findings_code_after_printing_the_report(
    exit_code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def verify(*args: object, **kwargs: object) -> Outcome:
        return Outcome("the report", exit_code)

    monkeypatch.setattr(verify_command, "verify_command", verify)

    assert main(["verify"]) == exit_code
    assert capsys.readouterr().out == "the report\n"


def test_verify_refuses_an_empty_range_in_one_line(
    record: Callable[[object, str], Recorder], capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = record(verify_command, "verify_command")
    argv = ["verify", "--from", "2026-11-26T12:00:00Z", "--to", "2026-11-26T09:00:00Z"]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and recorder.calls == []
    err = capsys.readouterr().err
    assert err == f"{PROG}: error: verify: --from must be before --to: the range holds no window\n"


# upgrade backfill: its examples, its range, and its refusals before Spark starts.


def test_upgrade_backfill_help_shows_its_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["upgrade", "backfill", "--help"])
    assert caught.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    examples = lines[lines.index("examples:") + 1 :]
    assert [line.split("#")[0].rstrip() for line in examples] == [
        f"  {PROG} upgrade backfill --plan",
        f"  {PROG} upgrade backfill",
        f"  {PROG} verify --from 2026-11-26T00:00:00Z",
        f"  {PROG} upgrade backfill --from 2026-11-26T09:00:00Z --to 2026-11-26T12:00:00Z --json",
    ]


def test_upgrade_help_points_to_the_backfill(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["upgrade", "--help"])
    assert f"  {PROG} upgrade backfill --plan " in capsys.readouterr().out


def test_upgrade_backfill_passes_its_range_and_options(
    record: Callable[[object, str], Recorder],
) -> None:
    recorder = record(backfill_command, "backfill_command")

    argv = ["upgrade", "backfill", "--plan", "--from", "2026-11-26T10:00:00+01:00"]
    assert main([*argv, "--to", "2026-11-26T12:00:00", "--json", "--master", "local[2]"]) == 0

    # 10:00 at +01:00 is 09:00 UTC; 12:00 with no offset is UTC.
    expected = backfill_command.BackfillRequest(
        from_ms=NOV_26_MS + 9 * 3_600_000, to_ms=NOV_26_MS + 12 * 3_600_000, plan_only=True
    )
    assert recorder.calls == [((_settings(), expected), {"as_json": True, "master": "local[2]"})]


def test_upgrade_backfill_without_options_backfills_everything_kafka_retains(
    record: Callable[[object, str], Recorder],
) -> None:
    recorder = record(backfill_command, "backfill_command")

    assert main(["upgrade", "backfill"]) == 0

    expected = backfill_command.BackfillRequest(from_ms=None, to_ms=None, plan_only=False)
    assert recorder.calls == [((_settings(), expected), {"as_json": False, "master": None})]


@pytest.mark.parametrize(
    "times",
    [
        ["--from", "2026-11-26T12:00:00Z", "--to", "2026-11-26T09:00:00Z"],
        ["--to", "2026-11-26T09:00:00Z", "--from", "2026-11-26T09:00:00Z"],
    ],
    ids=["after", "equal"],
)
def test_upgrade_backfill_refuses_an_empty_range_in_one_line(
    times: list[str],
    record: Callable[[object, str], Recorder],
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorder = record(backfill_command, "backfill_command")
    with pytest.raises(SystemExit) as exited:
        main(["upgrade", "backfill", *times])
    assert exited.value.code == 2 and recorder.calls == []
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"{PROG}: error: upgrade backfill: --from must be before --to: the range holds no window\n"
    )


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def test_every_commands_help_ends_with_an_example() -> None:
    parsers = list(_parsers(build_parser(PROJECT)))
    assert len(parsers) >= 16, [p.prog for p in parsers]
    for parser in parsers:
        text = parser.format_help().rstrip("\n")
        heading = max(text.rfind("\nexample:\n"), text.rfind("\nexamples:\n"))
        assert heading > 0, f"{parser.prog} --help has no example at its end"
        lines = text[heading:].split("\n")[2:]
        # Nothing but the example's indented lines after its heading: it is the end.
        assert all(line.startswith("  ") for line in lines), f"{parser.prog}: {lines}"
        commands = [line.strip() for line in lines if line.startswith(f"  {PROG} ")]
        assert commands, f"{parser.prog} --help ends with no command"
        # The example is of this command: `prog upgrade plan --help` shows `upgrade plan`.
        words = parser.prog.split()[1:]
        assert any(command.split()[1 : 1 + len(words)] == words for command in commands) or (
            not words
        ), f"{parser.prog}: {commands}"


# Start-up: part of an upgrade's downtime, so a command loads its use case only when it runs.

USE_CASES = "pyspark_kafka_upgrade._application"


def _loaded_after(script: str) -> list[str]:
    """The modules a fresh interpreter holds after ``script``: this one has loaded them all."""
    probe = f"{script}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    return done.stdout.split()


def test_importing_the_cli_loads_no_spark_and_no_use_case() -> None:
    loaded = _loaded_after("from pyspark_kafka_upgrade import cli")
    assert [m for m in loaded if m.startswith(("pyspark.", "py4j", USE_CASES))] == []
    assert "pyspark" not in loaded


def test_the_upgrade_commands_load_no_spark() -> None:
    # What `upgrade plan` and `apply` import to run, the project's pipeline first: the
    # pipeline is down meanwhile. A ledger on a Hadoop filesystem imports Spark when it is
    # opened, and nothing else does; the query module (which imports Spark) is named, not
    # imported, by a project.
    loaded = _loaded_after(
        "import pyspark_kafka_upgrade._example.pipeline\n"
        "import pyspark_kafka_upgrade.cli._upgrade\n"
        "import pyspark_kafka_upgrade._application.upgrade.commands\n"
        "import pyspark_kafka_upgrade._application.upgrade.event_scan\n"
    )
    assert [m for m in loaded if m.split(".")[0] in ("pyspark", "py4j")] == []


def test_help_loads_no_use_case() -> None:
    script = (
        "import contextlib, io\n"
        "from pyspark_kafka_upgrade import cli\n"
        "from pyspark_kafka_upgrade._example.pipeline import PROJECT\n"
        "for argv in (['--help'], ['upgrade', 'plan', '--help'], ['verify', '--help']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "        cli.main(PROJECT, argv)\n"
    )
    assert [m for m in _loaded_after(script) if m.startswith(USE_CASES)] == []


@pytest.mark.parametrize("kind", ["pyspark", "py4j"])
def test_a_spark_error_is_one_line_with_its_cause_and_exit_code_1(
    kind: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    text = "Traceback (most recent call last):\n  ...\nValueError: the broker went away\n"
    error = PySparkException(text) if kind == "pyspark" else Py4JError(text)

    def fail(*args: object, **kwargs: object) -> str:
        raise error

    monkeypatch.setattr(configuration, "render_settings", fail)
    assert main(["config", "show"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"{PROG}: error: Spark: ValueError: the broker went away\n"
