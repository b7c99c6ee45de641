"""What `upgrade backfill` refuses before it reads a record: decided on the scopes alone."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark_kafka_upgrade._core.reconciliation.scope import GenerationScope


def refusal(scopes: Sequence[GenerationScope], pipeline: str) -> str | None:
    """Why a backfill of ``pipeline`` must not run now, or None.

    A backfill computes with the current generation's query. Before that generation has
    committed a batch, `upgrade rollback` may still return to the one before it, which would
    then find windows holding values of a query it never ran.
    """
    if not scopes:
        return f"no generation of {pipeline!r} has run a batch: nothing was written to backfill"
    current = scopes[-1]
    if current.spans or current.written_through_ms is not None:
        return None
    if len(scopes) == 1:
        return (
            f"generation {current.generation} of {pipeline!r} has not committed a batch: "
            "nothing was written to backfill"
        )
    return (
        f"generation {current.generation} has not committed a batch yet: run it first. A "
        "backfill computes with its query, and `upgrade rollback` to generation "
        f"{scopes[-2].generation} would leave that query's values behind"
    )
