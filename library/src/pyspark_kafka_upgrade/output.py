"""Reading a pipeline's output from other jobs: every generation's committed rows, each
generation read through its own sink log, as one DataFrame with its ``generation`` column."""

from pyspark_kafka_upgrade._adapters.sink.reading import read_output

__all__ = ["read_output"]
