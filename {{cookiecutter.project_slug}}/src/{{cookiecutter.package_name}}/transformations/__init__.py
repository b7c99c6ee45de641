"""The pipeline's DataFrame logic, DataFrame in and DataFrame out.

- ``events``: the events and the metrics: the module a team edits;
- ``columns``: the column names the rest of the pipeline relies on;
- ``parsing``: Kafka records into events or quarantined records, never dropping one;
- ``aggregation``: events into windowed aggregates, with the upgrade's replay filter as a
  named step;
- ``event_parser`` and ``aggregate_types``: the pure-Python mirrors of parsing and of the
  output types, so that an upgrade is planned without a JVM.
"""
