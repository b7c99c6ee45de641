"""Spark's error text made one line a user can act on.

Spark's messages carry a Python traceback from its workers and a JVM stack; the cause is
their last ``SomethingError: ...`` line. The CLI and the run both report errors this way.
"""

from __future__ import annotations

import re

_CAUSE_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$")


def cause(error: BaseException) -> str:
    """The most specific one-line cause in a Spark error's text, at most 500 characters."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    causes = [match for line in lines if (match := _CAUSE_LINE.match(line))]
    if causes:
        name, message = causes[-1].groups()
        return f"{name}: {message}"[:500]
    return (lines[0] if lines else type(error).__name__)[:500]
