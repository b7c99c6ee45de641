"""A Kafka to file-sink streaming pipeline with event-time windows and lossless upgrades."""
