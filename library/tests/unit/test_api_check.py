"""`make api`: a public name removed, or a signature broken, fails the check unless the
version announces it; shown on a copy of the package in a repository of its own."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tools import api_check
from tools.api_check import Version, announces_a_break

import pyspark_kafka_upgrade as package

SRC = Path(package.__file__).parents[1]


@pytest.mark.parametrize(
    ("released", "current", "announced"),
    [
        ("0.7.0", "0.7.1", False),
        ("0.7.0", "0.8.0", True),
        ("0.7.3", "1.0.0", True),
        ("1.2.0", "1.3.0", False),
        ("1.2.0", "2.0.0", True),
        ("1.2.0", "0.9.0", False),
    ],
)
def test_a_break_is_announced_by_the_major_or_before_1_0_the_minor(
    released: str, current: str, announced: bool
) -> None:
    assert announces_a_break(Version.parse(released), Version.parse(current)) is announced


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=api@check", "-c", "user.name=api", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.fixture
def released(tmp_path: Path) -> Path:
    """A repository whose HEAD is the package as it is here: the release."""
    shutil.copytree(
        SRC / package.__name__,
        tmp_path / "src" / package.__name__,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "release")
    return tmp_path


def _edit(repo: Path, module: str, old: str, new: str) -> None:
    path = repo / "src" / package.__name__ / module
    text = path.read_text()
    assert old in text, f"{module} no longer has {old!r}: update this test"
    path.write_text(text.replace(old, new))


def _check(repo: Path, version: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = api_check.main(
        ["--against", "HEAD", "--released-version", version, "--src", str(repo / "src")]
    )
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def _set_version(repo: Path, version: str) -> None:
    current = str(api_check.current_version(repo / "src"))
    _edit(repo, "__init__.py", f'__version__ = "{current}"', f'__version__ = "{version}"')


def test_no_change_keeps_the_promise(released: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, output = _check(released, str(api_check.current_version(released / "src")), capsys)
    assert status == 0, output
    assert "keeps every promise" in output


def test_a_public_name_removed_fails_until_the_version_announces_it(
    released: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(released, "__init__.py", '    "Verdict",\n', "")
    _edit(
        released,
        "__init__.py",
        "from pyspark_kafka_upgrade._domain.records.advice import Verdict\n",
        "",
    )
    _set_version(released, "0.7.1")
    status, output = _check(released, "0.7.0", capsys)
    assert status == 1, output
    assert "Verdict: Public object was removed" in output
    assert "the version is still 0.7.1" in output

    _set_version(released, "0.8.0")
    status, output = _check(released, "0.7.0", capsys)
    assert status == 0, output
    assert "announced by 0.8.0" in output


def test_a_required_parameter_added_to_a_step_fails(
    released: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(
        released,
        "steps.py",
        "def window_events(events: DataFrame, recipe: Recipe)",
        "def window_events(events: DataFrame, recipe: Recipe, slack: int)",
    )
    _set_version(released, "1.1.0")
    status, output = _check(released, "1.0.0", capsys)
    assert status == 1, output
    assert "window_events(slack): Parameter was added as required" in output


def test_an_internal_change_is_no_break(released: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Everything under a name starting with _ may change in any release.
    _edit(released, "_domain/values/clock.py", "def now_ms(", "def now_in_ms(")
    status, output = _check(released, "0.7.0", capsys)
    assert status == 0, output
