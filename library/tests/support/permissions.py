"""A location this user may not read, for real.

``chmod 000`` refuses a normal user; root ignores it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH).
So a command meant to meet a refusal runs in a subprocess, and as root that subprocess runs
under ``setpriv`` without those two capabilities: the kernel then refuses it as it would
anyone else.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

_CAPABILITIES = "-dac_override,-dac_read_search"


def unprivileged(argv: Sequence[str]) -> list[str]:
    """``argv`` such that file permissions apply to it, whoever runs the tests."""
    if os.geteuid() != 0:
        return list(argv)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root ignores chmod, and setpriv (util-linux) is not here to drop that")
    return [setpriv, f"--bounding-set={_CAPABILITIES}", f"--inh-caps={_CAPABILITIES}", *argv]


@contextmanager
def unreadable(path: Path) -> Iterator[Path]:
    """``path`` with no permission for anyone, its own mode back afterwards."""
    mode = stat.S_IMODE(path.stat().st_mode)
    path.chmod(0)
    try:
        yield path
    finally:
        path.chmod(mode)
