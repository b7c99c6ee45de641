"""A driver that starts a pykafka query and stalls in its first batch, to be killed there.

Run as ``python -m support.stalled_driver BOOTSTRAP TOPIC CHECKPOINT``. The first batch's
sink never returns, so Spark has written ``offsets/0`` and never writes ``commits/0``: the
state a driver leaves behind when it dies mid-batch. The test kills this process group.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from pyspark.sql import DataFrame

from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing import connector_under_test
from pyspark_kafka_upgrade.testing._spark import build_test_spark_session

from .pykafka_streams import FORMAT, initial_offsets_file, register

# Only a safety net: the test kills the driver long before this.
_STALL_S = 600.0


def main(bootstrap: str, topic: str, checkpoint: Path) -> None:
    spark = build_test_spark_session("stalled-driver", connector_under_test(PROJECT))
    register(spark)
    frame = (
        spark.readStream.format(FORMAT)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "latest")
        .option("initialOffsetsLocation", str(initial_offsets_file(checkpoint)))
        .load()
    )

    def stall(_batch: DataFrame, _batch_id: int) -> None:
        threading.Event().wait(_STALL_S)

    query = (
        frame.writeStream.foreachBatch(stall)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
