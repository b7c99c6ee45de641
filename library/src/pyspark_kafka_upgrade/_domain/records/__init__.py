"""The typed records the core and the adapters exchange, each a document with a stable JSON
form where it crosses a version: the plan, the signature, the advice, the ledger's records and
its store interface, the planner's inputs (``facts``, ``history``) and its intermediate
records (``restart``, ``scans``, ``replay_filter``)."""
