"""Use case: ``output show``: every generation's committed output, each read through its own
``_spark_metadata``."""
