"""Which generation of a pipeline is the current one."""

from __future__ import annotations

from ..ledger.records import GenerationStatus
from ..ledger.store import OffsetStore


def current_generation(store: OffsetStore, pipeline: str) -> int:
    """The newest generation not retired; the next number when every one is (or none exists)."""
    generations = store.generations(pipeline)
    live = [g.generation for g in generations if g.status != GenerationStatus.RETIRED]
    if live:
        return max(live)
    return max((g.generation for g in generations), default=0) + 1
