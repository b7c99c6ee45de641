"""Does the public API still keep the last release's promise? ``make api`` runs this.

The public API is what ``pyspark_kafka_upgrade`` and its public modules export (their
``__all__``); griffe finds what a change breaks of it (a name removed, a parameter added as
required, a default changed...). A break is allowed only when the version announces it:
a new major version, or before 1.0 a new minor one (0.7.x -> 0.8.0). The last release is
named in ``api/released.toml`` (its version and the commit it was built from), so the check
needs no tag and no network: any clone with the history has it.

    python tools/api_check.py            # against api/released.toml
    python tools/api_check.py --against library-v0.7.0 --released-version 0.7.0
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1]
PACKAGE = "pyspark_kafka_upgrade"
RELEASED = LIBRARY / "api" / "released.toml"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> Version:
        match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(?:[.-]?\w+)?", text.strip())
        if match is None:
            raise SystemExit(f"api check: {text!r} is not a version like 1.2.3")
        return cls(*(int(part) for part in match.groups()))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def announces_a_break(released: Version, current: Version) -> bool:
    """Semantic versioning: a break needs a new major version; before 1.0, a new minor."""
    if current.major != released.major:
        return current.major > released.major
    return released.major == 0 and current.minor > released.minor


def version_text(src: Path) -> str:
    """The package's ``__version__`` as written, read without importing it."""
    text = (src / PACKAGE / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    if match is None:
        raise SystemExit(f"no __version__ in {src / PACKAGE / '__init__.py'}")
    return match.group(1)


def current_version(src: Path) -> Version:
    return Version.parse(version_text(src))


def breaking_changes(repo: Path, ref: str, src: Path) -> list[str]:
    """griffe's one-line explanation of each break between ``ref`` and the code in ``src``."""
    import griffe  # a dev tool: only this check needs it

    search = str(src.relative_to(repo))
    old = griffe.load_git(PACKAGE, ref=ref, repo=repo, search_paths=[search])
    new = griffe.load(PACKAGE, search_paths=[str(src)])
    found = griffe.find_breaking_changes(old, new)
    return [_ANSI.sub("", breakage.explain()).strip() for breakage in found]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", help="the release's git ref (default: api/released.toml)")
    parser.add_argument("--released-version", help="the version of --against")
    parser.add_argument("--src", type=Path, default=LIBRARY / "src", help="the package's parent")
    args = parser.parse_args(argv)
    if (args.against is None) != (args.released_version is None):
        parser.error("--against and --released-version go together")
    if args.against is None:
        released = tomllib.loads(RELEASED.read_text(encoding="utf-8"))
        ref, version = released["commit"], Version.parse(released["version"])
    else:
        ref, version = args.against, Version.parse(args.released_version)
    src = args.src.resolve()
    repo = _repository_of(src)
    _require_commit(repo, ref)
    current = current_version(src)
    breaks = breaking_changes(repo, ref, src)
    where = f"{version} ({ref[:12]})"
    if not breaks:
        print(f"api check: the public API keeps every promise of {where}; version {current}")
        return 0
    for line in breaks:
        print(f"  {line}")
    if announces_a_break(version, current):
        print(f"api check: {len(breaks)} breaking change(s) since {where}, announced by {current}")
        return 0
    print(
        f"api check: {len(breaks)} breaking change(s) since {where}, but the version is still "
        f"{current}: restore them, or bump the version (before 1.0 the minor, after it the "
        "major) and list each under the new version in CHANGELOG.md",
        file=sys.stderr,
    )
    return 1


def _require_commit(repo: Path, ref: str) -> None:
    found = subprocess.run(
        ["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=repo, capture_output=True, timeout=60
    )
    if found.returncode != 0:
        raise SystemExit(
            f"api check: the release's commit {ref} is not in this clone of {repo} (a shallow "
            "clone?); fetch the history (git fetch --unshallow) and run it again"
        )


def _repository_of(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    raise SystemExit(
        f"api check: {path} is not inside a git repository (the check reads its history)"
    )


if __name__ == "__main__":
    sys.exit(main())
