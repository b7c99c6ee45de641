"""The append-mode file sink: writing a query to it (``writer``), its ``_spark_metadata`` log
(``log``) and reading every generation's committed output (``reader``). The formats it
writes are listed in ``values.catalog``."""
