"""Internal. The use cases, one per CLI command (``run``, ``upgrade``, ``verify``,
``checkpoint show``, ``output show``, ``config show``, ``connector fetch``), and what several
of them share (``generation``: which generation is live, its signature)."""
