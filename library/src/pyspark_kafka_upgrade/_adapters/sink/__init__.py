"""The sinks every generation writes its output to, behind ``records.sink.Sink``: opening the
one the settings name (``opening``), reading any of them back (``reading``, ``union``), and
the file sink (``file_sink``: its ``writer``, its ``_spark_metadata`` ``log`` and its
``integrity``), the only code here that knows that log. The formats are listed in
``values.catalog``."""
