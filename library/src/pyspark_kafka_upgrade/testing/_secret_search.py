"""Where a secret turned up: a search through files and captured texts, for tests.

A test that gives a pipeline a sentinel password runs it, then looks for the sentinel
everywhere the pipeline writes or prints. Files are searched as bytes (Parquet, SQLite and
compressed-free logs alike); a hit names the file and the line, so a leak can be found and
fixed, and the report never repeats the secret itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

_MASK = "<SECRET>"
_CONTEXT = 40


@dataclass(frozen=True, slots=True)
class Leak:
    # A file's path, or the name of a captured text ("stderr of run").
    where: str
    line: int
    # The text around the secret, with the secret masked.
    excerpt: str

    def __str__(self) -> str:
        return f"{self.where}:{self.line}: {self.excerpt}"


def find_secret(
    secret: str, *, files: Iterable[Path] = (), texts: Mapping[str, str] | None = None
) -> list[Leak]:
    """Every place ``secret`` occurs: in ``files`` (directories are searched throughout)
    and in ``texts`` (name -> captured text)."""
    if len(secret) < 8:
        raise ValueError("a sentinel shorter than 8 characters would match by chance")
    needle = secret.encode()
    leaks: list[Leak] = []
    for path in _every_file(files):
        try:
            data = path.read_bytes()
        except OSError:
            continue  # removed meanwhile (Spark's temporary files)
        leaks.extend(_occurrences(str(path), data, needle))
    for name, text in (texts or {}).items():
        leaks.extend(_occurrences(name, text.encode(), needle))
    return leaks


def assert_no_secret(
    secret: str, *, files: Iterable[Path] = (), texts: Mapping[str, str] | None = None
) -> int:
    """Fail, naming each file and line, if ``secret`` occurs anywhere; else the number of
    files and texts searched (for a test to check the search was not empty)."""
    file_list = list(_every_file(files))
    leaks = find_secret(secret, files=file_list, texts=texts)
    if leaks:
        shown = "\n".join(f"  {leak}" for leak in leaks[:20])
        raise AssertionError(f"the secret occurs {len(leaks)} time(s):\n{shown}")
    return len(file_list) + len(texts or {})


def _every_file(roots: Iterable[Path]) -> Iterable[Path]:
    for root in roots:
        if root.is_dir():
            yield from sorted(path for path in root.rglob("*") if path.is_file())
        elif root.is_file():
            yield root


def _occurrences(where: str, data: bytes, needle: bytes) -> list[Leak]:
    found: list[Leak] = []
    start = data.find(needle)
    while start >= 0:
        line = data.count(b"\n", 0, start) + 1
        before = data[max(0, start - _CONTEXT) : start].decode("utf-8", "replace")
        after = data[start + len(needle) : start + len(needle) + _CONTEXT].decode(
            "utf-8", "replace"
        )
        excerpt = f"{before}{_MASK}{after}".replace("\n", " ")
        found.append(Leak(where, line, excerpt))
        start = data.find(needle, start + len(needle))
    return found
