"""Peak memory of a process tree, through psutil."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.kit.processes import MIB, peak_memory

# A grandchild holds 200 MiB, touched so that it is resident, until stdin closes.
GRANDCHILD = (
    "import sys; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
    "print('held', flush=True); sys.stdin.read()"
)
HOLDER = (
    "import subprocess, sys; "
    f"subprocess.Popen([sys.executable, '-c', {GRANDCHILD!r}], stdin=sys.stdin).wait()"
)


def test_the_peak_counts_the_children_of_the_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        with peak_memory(child.pid, every_s=0.02) as peak:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "held"
            deadline = time.monotonic() + 10
            while peak.bytes < 200 * MIB and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)

    assert peak.bytes >= 200 * MIB
    assert peak.samples >= 1


def test_a_process_that_is_gone_counts_nothing_and_does_not_raise() -> None:
    with peak_memory(os.getpid(), every_s=0.01) as peak:
        pass
    assert peak.bytes > 0
