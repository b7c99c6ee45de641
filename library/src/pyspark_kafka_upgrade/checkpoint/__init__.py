"""Reading a Structured Streaming checkpoint and a file sink's log, without a JVM.

The CLI inspects checkpoints where Spark may not run, so everything here reads the files
through ``storage`` (pyarrow filesystems) and parses Spark's formats itself:

- ``log_files``: batch file names, version lines and JSON lines shared by every log;
- ``offset_log``: ``offsets/N``, versions 1 (positional sources) and 2 (named sources);
- ``commit_log``: ``commits/N``;
- ``query_metadata``: the ``metadata`` file with the query id;
- ``sink_log``: a file sink's ``_spark_metadata`` log, with compaction;
- ``reader``: ``read_checkpoint`` and ``read_sink_log``, the entry points.
"""
