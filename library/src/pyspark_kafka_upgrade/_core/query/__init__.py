"""The query's logic that needs no Spark: the column names (``columns``), what the parser
reads from a value (``event_fields``), its pure-Python mirror (``event_parser``), the output
types (``aggregate_types``) and the recipe a project's query is built from (``recipe``)."""
