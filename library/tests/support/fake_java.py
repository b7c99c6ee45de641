"""A stand-in for a JDK: a directory whose ``java`` prints a chosen ``-version`` line."""

from __future__ import annotations

from pathlib import Path


def fake_java(tmp_path: Path, version_line: str, exit_code: int = 0) -> Path:
    """A directory whose `java` prints ``version_line`` on stderr, as `java -version` does."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\nexit {exit_code}\n")
    java.chmod(0o755)
    return bin_dir
