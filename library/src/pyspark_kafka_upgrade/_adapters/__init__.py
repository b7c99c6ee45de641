"""Internal. Adapters, one outside system each: Kafka, a ledger store, the sink, Spark,
a plot, the filesystem (``storage``, which the checkpoint, sink and run lock read through)."""
