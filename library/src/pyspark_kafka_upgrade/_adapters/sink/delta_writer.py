"""Appending a streaming query to the one Delta table every generation shares.

Each micro-batch is one Delta commit through ``foreachBatch``, rather than Delta's own
streaming sink, for three reasons:

* its idempotence key is the generation, not the query: the commit carries the transaction
  ``(pyspark-kafka-upgrade/generation-<n>, batch id)``, so Delta skips a batch re-run after a
  crash between its commit and the checkpoint's, and the log itself says which generation
  committed which batch (Delta's sink keys it by the query id, which only the checkpoint
  knows);
* every row gets its ``generation``, and the table is partitioned by it, so each file
  belongs to one generation and a reader of one generation reads only its files;
* a new aggregate is a new nullable column (``mergeSchema``): older generations' rows hold
  null there.

Append mode with the watermark, as the file sink: a window is written once, when the
watermark passes its end, and the replay filter keeps generations' windows apart.

A backfill (:func:`write_table_backfill`) is one more commit: its rows replace every row of
the windows it owns (``replaceWhere`` on them), so any reader of the table, Spark or not,
sees each window once, with the backfill's columns.
"""

from __future__ import annotations

import json
import os
import signal
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade._adapters.sink.delta_catalog import check_table_name, register_table
from pyspark_kafka_upgrade._adapters.sink.delta_log import (
    BACKFILL_APP_ID,
    app_id,
    has_log,
    last_batch,
    mark_text,
)
from pyspark_kafka_upgrade._adapters.sink.writer import triggered
from pyspark_kafka_upgrade._core.query.columns import WINDOW_END, WINDOW_START
from pyspark_kafka_upgrade._core.query.window_sql import owned_by
from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit
from pyspark_kafka_upgrade._domain.records.sink import GENERATION, Trigger
from pyspark_kafka_upgrade._domain.records.sink_errors import IncompatibleGenerationsError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["FAILPOINT_ENV_VAR", "start_delta_sink", "write_table_backfill"]

# The proofs' one way in: "<query name>:<batch id>" makes the driver kill itself with SIGKILL
# right after that batch's Delta commit, before Spark writes the checkpoint's commit: the
# moment a crash can repeat a batch. Unset in production; read once per query start.
FAILPOINT_ENV_VAR = "PYSPARK_KAFKA_UPGRADE_KILL_AFTER_TABLE_COMMIT"


def start_delta_sink(
    frame: DataFrame,
    *,
    query_name: str,
    table: str,
    checkpoint: str,
    generation: int,
    trigger: Trigger,
    name: str = "",
) -> StreamingQuery:
    """Start appending ``frame`` to the table at ``table``; ``name``: the catalog name to
    register over it (``delta_catalog``), "" for none."""
    if any(column.lower() == GENERATION for column in frame.columns):
        raise IncompatibleGenerationsError(
            f"the output already has a column named {GENERATION!r}, the column of the Delta "
            f"table {table} that says which generation wrote a row; rename it in the "
            "aggregation"
        )
    from pyspark.sql import functions as F

    application = app_id(generation)
    kill_after = _failpoint(query_name)
    # Only the first batch of a start can be one the table committed already: the batch a
    # crash interrupted between the table's commit and the checkpoint's. Spark runs it
    # again, from the same offsets and with the same watermark, so the rows are the ones
    # committed. Delta would skip the append by its transaction without reading the rows,
    # but the batch must still run: its state stores commit only when it does, and Spark
    # 4.2 fails a foreachBatch batch whose state was not committed
    # (STATE_STORE_COMMIT_VALIDATION_FAILED). So it runs into the noop sink instead. Read
    # before the query starts (one line if the table cannot be read), and it stays true: the
    # generation's run lock keeps every other writer of its transactions out.
    committed = last_batch(table, generation)
    # Refused before the query starts when the name stands for another table; registered
    # now if the log exists, else after this run's first commit, once.
    unregistered = False
    if name and has_log(table):
        register_table(frame.sparkSession, name, table)
    elif name:
        unregistered = not check_table_name(frame.sparkSession, name, table)

    def append(batch: DataFrame, batch_id: int) -> None:
        nonlocal unregistered
        if committed is not None and batch_id <= committed:
            batch.write.format("noop").mode("overwrite").save()
            return
        (
            batch.withColumn(GENERATION, F.lit(generation).cast("int"))
            .write.format("delta")
            .mode("append")
            .partitionBy(GENERATION)
            .option("txnAppId", application)
            .option("txnVersion", batch_id)
            .option("mergeSchema", "true")
            .option("userMetadata", mark_text(generation, batch_id))
            .save(table)
        )
        if unregistered:
            register_table(batch.sparkSession, name, table)
            unregistered = False
        if kill_after == batch_id:
            _kill_this_driver()

    writer = (
        frame.writeStream.queryName(query_name)
        .foreachBatch(append)
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
    )
    return triggered(writer, trigger).start()


def write_table_backfill(rows: DataFrame, table: str, commit: BackfillCommit) -> None:
    """Replace the rows of the windows ``commit`` owns with ``rows``, in one commit.

    Atomic: a reader, and a run that dies in the middle, see the table as it was or with
    all of it. Idempotent: the transaction ``(pyspark-kafka-upgrade/backfill, number)``
    makes Delta skip a second write of the same number. Beside a running generation: its
    batches are blind appends, which do not conflict with this overwrite (Delta's default
    WriteSerializable isolation), and they hold windows after the backfill's.
    """
    (
        rows.write.format("delta")
        .mode("overwrite")
        .partitionBy(GENERATION)
        # Every row of those windows, whichever generation wrote it (one written twice too);
        # Delta refuses the commit if any new row falls outside it.
        .option(
            "replaceWhere",
            owned_by(commit, f"unix_micros({WINDOW_START})", f"unix_micros({WINDOW_END})"),
        )
        .option("txnAppId", BACKFILL_APP_ID)
        .option("txnVersion", commit.backfill)
        # A metric the current query added and no generation has written yet.
        .option("mergeSchema", "true")
        .option("userMetadata", json.dumps(commit.to_json(), separators=(",", ":")))
        .save(table)
    )


def _kill_this_driver() -> None:
    # With Spark's JVM when this process leads its group (a driver started on its own, as
    # the proofs start it): nothing of the driver outlives the kill to write a commit.
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _failpoint(query_name: str) -> int | None:
    chosen = os.environ.get(FAILPOINT_ENV_VAR, "").strip()
    name, _, batch = chosen.rpartition(":")
    if name == query_name and batch.isdigit():
        return int(batch)
    return None
