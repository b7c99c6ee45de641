"""The upgrade several modules inspect: proved once per run, each module reading it or a copy.

Version 1 counts page views in 10-minute windows sliding every 5, on 40 of 60 minutes of
events; version 2 adds three metrics (``approx_count_distinct``, ``min`` and ``max`` of the
user), so it starts a new generation. `verify`'s tests break its output one fault at a time
and put it back; `upgrade backfill`'s tests change it for good, so they work on a copy
(``support.proofs.copy_of``).
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade.testing import KafkaBackend, ProofReport
from support.proofs import prove_metrics_added


@pytest.fixture(scope="package")
def upgrade_adding_metrics(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path_factory: pytest.TempPathFactory
) -> ProofReport:
    return prove_metrics_added(
        spark, kafka_backend, tmp_path_factory.mktemp("upgrade-adding-metrics")
    )
