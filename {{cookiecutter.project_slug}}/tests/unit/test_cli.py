import json
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import (
    __version__,
)
from {{ cookiecutter.package_name }}.cli import (
    main,
)


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
    assert document["kafka"]["topics"] == [{{ cookiecutter.kafka_topic | tojson }}]
    assert document["ledger"]["store"] == {{ cookiecutter.offset_store | tojson }}


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
    assert capsys.readouterr().out.split() == [{{ cookiecutter.package_name | tojson }}, __version__]
