"""Use case: ``run``. The generation claimed under its run lock (``command``), what the
ledger needs around the queries (``bookkeeping``), what runs as data (``queries``), the loop
that runs it (``supervisor``) and the line per batch (``progress``)."""
