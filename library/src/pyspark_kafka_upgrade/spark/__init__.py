"""The Spark runtime: the one place a SparkSession is built (``session``), the Kafka
connector's jars resolved with Maven (``maven``, ``kafka_jars``), progress events as JSON
(``progress_events``) and Spark's error text made one line (``errors``)."""
