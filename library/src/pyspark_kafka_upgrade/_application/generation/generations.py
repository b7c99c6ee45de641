"""Which generation of a pipeline is the current one, and which have committed checkpoints."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark_kafka_upgrade._adapters.checkpoint.reader import read_checkpoint
from pyspark_kafka_upgrade._adapters.storage.filesystem import (
    StorageError,
    absolute_uri,
    join_uri,
    open_location,
)
from pyspark_kafka_upgrade._core.formats.format_errors import CheckpointError
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord, GenerationStatus
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.layout import (
    GenerationLayout,
    parse_generation_directory_name,
)


def current_generation(store: OffsetStore, pipeline: str) -> int:
    """The newest generation not retired; the next number when every one is (or none exists)."""
    return current_of(store.generations(pipeline))


def current_of(generations: Sequence[GenerationRecord]) -> int:
    """:func:`current_generation` of the records a ledger holds for one pipeline."""
    live = [g.generation for g in generations if g.status != GenerationStatus.RETIRED]
    if live:
        return max(live)
    return max((g.generation for g in generations), default=0) + 1


def committed_generations(root: str) -> list[int]:
    """The generations under ``root`` whose checkpoint holds a committed batch, ascending."""
    try:
        names = open_location(join_uri(absolute_uri(root), "checkpoints")).list_names()
    except StorageError:
        return []
    committed = []
    for name in names:
        generation = parse_generation_directory_name(name)
        if generation is None:
            continue
        try:
            state = read_checkpoint(GenerationLayout(absolute_uri(root), generation).checkpoint)
        except CheckpointError:
            continue
        if state.last_committed_batch is not None:
            committed.append(generation)
    return sorted(committed)
