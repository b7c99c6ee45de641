"""Spark's checkpoint and file-sink log formats, parsed from bytes: ``offsets/N``
(``offset_log``), ``commits/N`` (``commit_log``), ``metadata`` (``query_metadata``), a sink's
``_spark_metadata`` (``sink_log``), and what every log file shares (``log_files``)."""
