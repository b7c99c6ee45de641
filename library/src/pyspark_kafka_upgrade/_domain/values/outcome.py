"""What a command that can fail on its findings returns: its report and its exit code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Outcome:
    """A report to print in full, and the exit code it ends with (1: the check failed)."""

    text: str
    exit_code: int = 0
