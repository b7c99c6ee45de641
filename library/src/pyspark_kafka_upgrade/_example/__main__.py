"""``python -m pyspark_kafka_upgrade._example``: the reference pipeline's CLI."""

from pyspark_kafka_upgrade import cli
from pyspark_kafka_upgrade._example.pipeline import PROJECT

raise SystemExit(cli.main(PROJECT))
