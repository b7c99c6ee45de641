"""Modules and functions over a size limit: the figures issue 36 sets targets for.

A module's size is its line count. A function's is the lines from its ``def`` to its last
line, less its docstring's: a long docstring explains, it does not make the function harder
to follow. A nested function counts on its own and inside the one around it.

    python tools/size_report.py [--max-module 500] [--max-function 60] [--allow-modules N]
        [--allow-functions N] [PATH ...]

It lists every module and function over the limits, largest first, and exits 1 when more of
them are over than ``--allow-modules`` / ``--allow-functions`` allow (0 unless given), so that
a check can hold a count while the rest is reduced.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PATHS = (Path(__file__).resolve().parents[1] / "src",)

_Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Sized:
    """One module or function and its size in lines."""

    place: str
    lines: int


def module_lines(source: str) -> int:
    """Lines in the module, as ``wc -l`` counts them for a file ending in a newline."""
    return len(source.splitlines())


def function_lines(function: _Function) -> int:
    """From the ``def`` line to the last line, less the docstring's lines (decorators apart)."""
    end = function.end_lineno if function.end_lineno is not None else function.lineno
    lines = end - function.lineno + 1
    first = function.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        doc_end = first.end_lineno if first.end_lineno is not None else first.lineno
        lines -= doc_end - first.lineno + 1
    return lines


def functions_in(tree: ast.AST) -> Iterator[tuple[str, _Function]]:
    """Every function and method in ``tree``, with its dotted name (``Class.method``)."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, _Function]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, child
                yield from walk(child, f"{name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def python_files(paths: Sequence[Path]) -> list[Path]:
    """The ``.py`` files named, or below the folders named, in a stable order."""
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return found


def _shown(file: Path) -> str:
    """The file's path from the working folder where it is below it, else in full."""
    try:
        return str(file.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(file)


def measure(files: Sequence[Path]) -> tuple[list[Sized], list[Sized]]:
    """Every module's size and every function's (``path:line name``)."""
    modules: list[Sized] = []
    functions: list[Sized] = []
    for file in files:
        source = file.read_text(encoding="utf-8")
        name = _shown(file)
        modules.append(Sized(name, module_lines(source)))
        for dotted, function in functions_in(ast.parse(source, filename=str(file))):
            functions.append(Sized(f"{name}:{function.lineno} {dotted}", function_lines(function)))
    return modules, functions


def over(sizes: Sequence[Sized], limit: int) -> list[Sized]:
    """Those over ``limit``, largest first."""
    return sorted((s for s in sizes if s.lines > limit), key=lambda s: (-s.lines, s.place))


def report(modules: Sequence[Sized], functions: Sequence[Sized], args: argparse.Namespace) -> str:
    """The text the command prints: a heading with the count per kind, then a row each."""
    lines: list[str] = []
    for kind, sizes, limit in (
        ("modules", modules, args.max_module),
        ("functions", functions, args.max_function),
    ):
        big = over(sizes, limit)
        lines.append(f"{kind} over {limit} lines: {len(big)}")
        lines.extend(f"  {s.lines:5d}  {s.place}" for s in big)
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: src)")
    parser.add_argument("--max-module", type=int, default=500, help="lines a module may have")
    parser.add_argument("--max-function", type=int, default=60, help="lines a function may have")
    parser.add_argument("--allow-modules", type=int, default=0, help="modules over allowed")
    parser.add_argument("--allow-functions", type=int, default=0, help="functions over allowed")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report; 1 when more are over the limits than allowed, else 0."""
    args = _parser().parse_args(argv)
    modules, functions = measure(python_files(args.paths or DEFAULT_PATHS))
    print(report(modules, functions, args))
    too_many = (
        len(over(modules, args.max_module)) > args.allow_modules
        or len(over(functions, args.max_function)) > args.allow_functions
    )
    return 1 if too_many else 0


if __name__ == "__main__":
    sys.exit(main())
