"""Kafka: the stream a query reads with either connector (``connector``), the pip-only
streaming source on PySpark's Python Data Source API (``pykafka`` and its parts), and the
brokers' metadata and offsets the upgrade asks for (``kafka_metadata``)."""
