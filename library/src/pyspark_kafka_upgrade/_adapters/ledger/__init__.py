"""The offset ledger's stores, behind ``model.store.OffsetStore``.

One record per committed batch, one per generation and a marker for each write that failed.
Each store lives in its own module (``sqlite_store``, ``postgres_store``,
``filesystem_store``), imported by name only when the settings choose it (``opening``), so a
store's client library is needed only where it is used (PostgreSQL: the ``postgres`` extra).
"""
