"""The upgrade's reasoning: pure, no I/O, no JVM, unit-tested on hand-made facts.

``decide`` turns gathered facts (``model.facts``) into a plan (``model.plan``), building on
the restart arithmetic (``restart``, ``retention``, ``tightening``, ``late_records``);
``advisor`` compares two signatures; ``staleness`` says whether a reviewed plan still holds;
``render`` turns a plan into text. The records they exchange live in ``model``.
"""
