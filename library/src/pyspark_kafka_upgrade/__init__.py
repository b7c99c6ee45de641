"""A Kafka to file-sink streaming pipeline with event-time windows and lossless upgrades."""

# The one place the version is written; pyproject.toml reads it from here.
__version__ = "0.6.0"
