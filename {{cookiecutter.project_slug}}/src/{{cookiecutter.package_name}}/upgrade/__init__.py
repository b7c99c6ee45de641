"""The upgrade onto a new checkpoint: plan it, review it, apply exactly what was reviewed.

    gather ──▶ facts ──▶ decide ──▶ plan ──▶ render / plan_file ──▶ apply ──▶ (run)
      │                    ▲                                ▲
      └── event_scan ──────┘ (records read between the steps) └── staleness: did the world move?

Pure (no I/O, unit-tested on hand-made facts): ``decide`` and what it builds on, the
restart arithmetic (``windows``, ``history``, ``restart``, ``retention``, ``tightening``,
``late_records``, ``replay_filter``), the documents (``plan``, ``signature``, ``advisor``),
``staleness`` and ``render``. Reading the world: ``gather`` (ledger, checkpoints, brokers),
``event_scan`` (Kafka records, without Spark), ``plan_file``. The use cases: ``commands``,
``apply``, ``lookup``.
"""
