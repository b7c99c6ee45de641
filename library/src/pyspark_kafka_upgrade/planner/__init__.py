"""The upgrade's reasoning: pure, no I/O, no JVM, unit-tested on hand-made facts.

``decide`` turns gathered facts into a plan, building on the restart arithmetic
(``windows``, ``history``, ``restart``, ``retention``, ``tightening``, ``late_records``,
``replay_filter``). The documents that cross modules are typed records with ``to_json`` and
``from_json``: ``plan``, ``signature``; ``advisor`` compares two signatures. ``staleness``
says whether a reviewed plan still holds; ``render`` and ``words`` turn it into text.
"""
