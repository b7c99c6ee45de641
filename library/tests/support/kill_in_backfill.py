"""`upgrade backfill` that kills itself with SIGKILL right after one of its steps.

Run as ``python -m support.kill_in_backfill STEP <CLI arguments>``: the real command in a
process of its own, its JVM killed with it; only the moment is chosen (``BACKFILL_STEPS``).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from pyspark_kafka_upgrade._application import backfill as use_case
from support.example import main


def main_killed_after(step: str, argv: list[str]) -> int:
    if step not in use_case.BACKFILL_STEPS:
        raise SystemExit(f"no step {step!r}; the steps: {', '.join(use_case.BACKFILL_STEPS)}")
    command = use_case.backfill_command

    def die_after(done: str) -> None:
        if done == step:
            print(f"killed after {done}", flush=True)
            os.killpg(os.getpgrp(), signal.SIGKILL)  # the JVM too, as a real kill would

    def backfill_and_die(*args: Any, **kwargs: Any) -> Any:
        return command(*args, after_step=die_after, **kwargs)

    use_case.backfill_command = backfill_and_die
    return main(argv)


if __name__ == "__main__":
    raise SystemExit(main_killed_after(sys.argv[1], sys.argv[2:]))
