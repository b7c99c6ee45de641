"""Spark: the one place a SparkSession is built (``session``), the Kafka connector's jars
resolved with Maven (``maven``, ``kafka_jars``), the query's DataFrame steps (``parsing``,
``aggregation``, and ``steps``, which a project's query composes), the offset ledger's
listener (``listener``), progress events as JSON (``progress_events``), the refusal of local
storage on a cluster (``cluster_storage``) and Spark's errors made one line (``errors``)."""
