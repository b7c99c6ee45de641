"""The upgrade onto a new checkpoint, as use cases: plan it, review it, apply exactly that.

    gather ──▶ model.facts ──▶ planner.decide ──▶ model.plan ──▶ plan_file ──▶ apply ──▶ (run)
      │                              ▲                                   ▲
      └── event_scan ────────────────┘                 planner.staleness: did the world move?

Here is what reads and writes the world: ``gather`` (ledger, checkpoints, brokers),
``event_scan`` (Kafka records, without Spark; ``event_fast_path`` judges them as the
parser's mirror does, a batch at a time), ``plan_file``, ``lookup`` (the generations
of a pipeline, under its run lock) and the commands. The reasoning is in ``planner``, which
reads nothing and is unit-tested on hand-made facts.
"""
