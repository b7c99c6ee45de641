"""Reading Kafka: a pip-only streaming source on PySpark's Python Data Source API."""
