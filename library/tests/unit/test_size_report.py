"""tools/size_report.py: the module and function sizes issue 36 sets limits on."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from tools import size_report


def _function(source: str) -> size_report._Function:
    node = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(node, size_report._Function)
    return node


def test_a_function_counts_from_its_def_to_its_last_line_without_its_docstring() -> None:
    function = _function(
        '''
        @decorated
        def f(a: int) -> int:
            """One line,
            and another."""
            b = a + 1
            return b
        '''
    )
    assert size_report.function_lines(function) == 3


def test_a_function_whose_first_statement_is_no_text_keeps_every_line() -> None:
    assert size_report.function_lines(_function("def f():\n    1\n    return 2\n")) == 3


def test_nested_functions_and_methods_are_named_by_where_they_stand() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            class A:
                def m(self):
                    def inner():
                        pass
            async def g():
                pass
            """
        )
    )
    assert [name for name, _ in size_report.functions_in(tree)] == ["A.m", "A.m.inner", "g"]


def _write(folder: Path, name: str, lines: int) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(lines - 1))
    (folder / name).write_text(f"def big():\n{body}\n", encoding="utf-8")


def test_the_report_lists_what_is_over_and_fails_past_what_is_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path, "large.py", 12)
    _write(tmp_path, "small.py", 4)
    limits = ["--max-module", "10", "--max-function", "5", str(tmp_path)]

    assert size_report.main(limits) == 1
    out = capsys.readouterr().out
    assert "modules over 10 lines: 1" in out
    assert "functions over 5 lines: 1" in out
    assert "large.py:1 big" in out
    assert "small.py" not in out

    assert size_report.main([*limits, "--allow-modules", "1", "--allow-functions", "1"]) == 0
    assert size_report.main(["--max-module", "12", "--max-function", "12", str(tmp_path)]) == 0
