"""The plugin's upgrade proof, which a project runs on its own events, can fail: it passes
on the reference pipeline and catches a query whose replay filter does nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import support.proofs as proofs
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing import (
    KafkaBackend,
)

pytestmark = pytest.mark.integration


def test_the_proof_holds_on_the_reference_pipeline(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    report = proofs.prove(PROJECT, spark, kafka_backend, tmp_path)
    assert report.exact, report.explain()
    # Windows starting 09:55 to 10:40 (the last W is 10:54), for three articles.
    assert len(report.expected) == 30
    assert {g for writers in report.written.values() for g, _ in writers} == {1, 2}
    assert json.dumps(report.explain()).count("0 lost, 0 written twice") == 1


def test_the_proof_catches_a_query_whose_replay_filter_does_nothing(
    spark: SparkSession, kafka_backend: KafkaBackend, tmp_path: Path
) -> None:
    broken = proofs.with_idle_replay_filter(PROJECT, tmp_path)
    report = proofs.prove(broken, spark, kafka_backend, tmp_path)
    assert not report.exact
    # The replay rebuilds the windows the old generation wrote from the replayed events:
    # written twice, the second time with only part of their events.
    assert report.written_twice and report.different, report.explain()
