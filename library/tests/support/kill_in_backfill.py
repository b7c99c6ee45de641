"""`upgrade backfill` that kills itself with SIGKILL at one moment of its work.

Run as ``python -m support.kill_in_backfill MOMENT <CLI arguments>``: the real command in a
process of its own, its JVM killed with it; only the moment is chosen. A moment is one of
``BACKFILL_STEPS`` (right after it), or ``MID_WRITE``: inside the Spark job that writes the
rows, once one of its tasks has written its file and while the next one runs, as a machine
lost in the middle of the write would leave it.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark_kafka_upgrade._adapters.sink import backfill_files, delta_writer
from pyspark_kafka_upgrade._application import backfill as use_case
from support.example import main

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit

MID_WRITE = "mid-write"
# Where the write's tasks leave word (``MID_WRITE``): the first task's partition, then the
# kill. A test reads it to know the moment came.
MARKS_ENV_VAR = "KILL_IN_BACKFILL_MARKS"


def main_killed_at(moment: str, argv: list[str]) -> int:
    if moment == MID_WRITE:
        _die_mid_write(Path(os.environ.get(MARKS_ENV_VAR) or tempfile.mkdtemp()))
        return main(argv)
    if moment not in use_case.BACKFILL_STEPS:
        steps = ", ".join((*use_case.BACKFILL_STEPS, MID_WRITE))
        raise SystemExit(f"no moment {moment!r}; the moments: {steps}")
    command = use_case.backfill_command

    def die_after(done: str) -> None:
        if done == moment:
            print(f"killed after {done}", flush=True)
            os.killpg(os.getpgrp(), signal.SIGKILL)  # the JVM too, as a real kill would

    def backfill_and_die(*args: Any, **kwargs: Any) -> Any:
        return command(*args, after_step=die_after, **kwargs)

    use_case.backfill_command = backfill_and_die
    return main(argv)


def _die_mid_write(marks: Path) -> None:
    """Every sink's write of a backfill's rows, made to kill the driver's process group from
    inside its second task: the first task's file is written, the commit is not."""
    driver_group = os.getpgrp()  # Spark's Python workers lead a process group of their own

    def dying(rows: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        def alive(partition: int) -> bool:
            first = marks / "first-task"
            if not first.exists():
                first.write_text(str(partition))
            elif first.read_text() != str(partition):
                (marks / "killed").write_text(f"in the task of partition {partition}")
                os.killpg(driver_group, signal.SIGKILL)
                os.killpg(os.getpgrp(), signal.SIGKILL)
            return True

        # Two tasks whatever the rows' partitioning (Spark may coalesce it into one), and
        # the check in them: a deterministic filter would be pushed below the repartition,
        # into the tasks that only read the rows.
        check = F.udf(alive, "boolean").asNondeterministic()
        return rows.repartition(2).where(check(F.spark_partition_id()))

    write_rows, write_table = backfill_files.write_backfill_rows, delta_writer.write_table_backfill

    def write_rows_and_die(rows: DataFrame, directory: str, file_format: str) -> tuple[str, ...]:
        return write_rows(dying(rows), directory, file_format)

    def write_table_and_die(rows: DataFrame, table: str, commit: BackfillCommit) -> None:
        write_table(dying(rows), table, commit)

    backfill_files.write_backfill_rows = write_rows_and_die
    delta_writer.write_table_backfill = write_table_and_die


if __name__ == "__main__":
    raise SystemExit(main_killed_at(sys.argv[1], sys.argv[2:]))
