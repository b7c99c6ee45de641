"""The upgrade's reasoning: pure, no I/O, no JVM, unit-tested on hand-made facts.

``decide`` turns gathered facts (``_domain.records.facts``) into a plan
(``_domain.records.plan``); ``advisor`` compares two signatures; ``staleness`` says whether
a reviewed plan still holds; ``plan_words`` puts a plan into words.

Where each partition restarts is decided in four steps, run in this order by
``decide.batch_level`` (1 to 3) and ``decide.decide`` (4):

1. T_min, the earliest event time that can still reach a window open at W:
   ``_domain.values.windows`` (below the core: the replay filter and the picture use it).
2. The batch level: the start offsets of the first committed batch that can hold such an
   event (``restart``), over the batches the ledger and the checkpoint left
   (``old_batches``: W, each batch's offsets, the smaller where the two disagree).
3. Retention: a restart offset the broker already deleted is refused, or moved up when the
   loss is accepted (``retention``).
4. Tightening: each partition moved up to its first record at or after T_min
   (``tightening``).

The records they pass along (``RestartPlan``, ``PartitionPlan``, ``RestartKind``) are in
``_domain.records.restart``; the records waiting after the old end that the new generation
drops as late are counted by ``late_records``.
"""
