"""What the READMEs tell users to run exists: every make target they name is a real one."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import TEMPLATE_DIR

# A Makefile target that `make help` lists: "name: prerequisites ## what it does".
HELP_TARGET = re.compile(r"^([a-z][a-z-]*):[^\n]*## ", re.MULTILINE)
README_MAKE = re.compile(r"`make ([a-z][a-z-]*)`|^make ([a-z][a-z-]*)\b", re.MULTILINE)


def make_targets(makefile: Path) -> set[str]:
    return set(HELP_TARGET.findall(makefile.read_text())) - {"help"}


def readme_targets(readme: Path) -> set[str]:
    return {first or second for first, second in README_MAKE.findall(readme.read_text())}


def test_the_projects_readme_names_exactly_its_make_targets(default_project: Path) -> None:
    assert readme_targets(default_project / "README.md") == make_targets(
        default_project / "Makefile"
    )


def test_the_templates_two_commands_are_make_targets() -> None:
    # Command lines of its code blocks; inline mentions may name a generated project's.
    commands = re.findall(r"^make ([a-z][a-z-]*)\b", (TEMPLATE_DIR / "README.md").read_text(), re.M)
    assert {"demo", "test"} <= set(commands)
    assert set(commands) <= make_targets(TEMPLATE_DIR / "Makefile")
