"""The offset ledger's storage layer.

One record per committed batch, one per generation and a marker for each write that failed,
kept by an ``OffsetStore`` (see ``store``). Each implementation lives in its own module
(``sqlite_store``, ``postgres_store``, ``filesystem_store``) so a project keeps only the one
it chose, and only that one's dependencies.
"""
