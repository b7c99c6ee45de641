"""`upgrade apply` that kills itself with SIGKILL right after one of its steps.

Run as ``python -m support.kill_after_step STEP <CLI arguments>``. The command is the real
one, in a process of its own; only the moment of death is chosen, which a test cannot hit
reliably from outside, since the steps take milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from pyspark_kafka_upgrade._application.upgrade import commands as upgrade
from support.example import main


def main_killed_after(step: str, argv: list[str]) -> int:
    if step not in upgrade.APPLY_STEPS:
        raise SystemExit(f"no apply step {step!r}; the steps: {', '.join(upgrade.APPLY_STEPS)}")
    apply = upgrade.apply_command

    def die_after(done: str) -> None:
        if done == step:
            print(f"killed after {done}", flush=True)
            os.killpg(os.getpgrp(), signal.SIGKILL)  # the JVM too, as a real kill would

    def apply_and_die(*args: Any, **kwargs: Any) -> str:
        return apply(*args, after_step=die_after, **kwargs)

    upgrade.apply_command = apply_and_die
    return main(argv)


if __name__ == "__main__":
    raise SystemExit(main_killed_after(sys.argv[1], sys.argv[2:]))
