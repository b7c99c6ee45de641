"""What every sink does alike with what its log says was committed: which generations a
reader asked for, and which committed file Spark's error is about."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pyspark_kafka_upgrade._adapters.storage.filesystem import location_key
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile, FileReadFailure
from pyspark_kafka_upgrade._domain.records.sink import GenerationOutput
from pyspark_kafka_upgrade._domain.records.sink_errors import NoOutputError

__all__ = ["chosen_generations", "damage_of"]


def chosen_generations(
    present: Sequence[int],
    asked: Iterable[int] | None,
    *,
    none_present: str,
    not_present: Callable[[int], str],
) -> list[int]:
    """``asked`` (default: every one ``present``), ascending. NoOutputError with
    ``none_present`` when nothing is, or with ``not_present(generation)`` followed by the
    generations that are, for the first one asked for that is not."""
    if asked is None:
        if not present:
            raise NoOutputError(none_present)
        return sorted(present)
    chosen = sorted(set(asked))
    missing = [generation for generation in chosen if generation not in present]
    if missing:
        available = ", ".join(map(str, sorted(present))) or "none"
        raise NoOutputError(f"{not_present(missing[0])}; generations with output: {available}")
    return chosen


def damage_of(
    failure: FileReadFailure | None, outputs: Sequence[GenerationOutput]
) -> DamagedFile | None:
    """The committed file of ``outputs`` that ``failure`` is about, as damage of its
    generation; None when it is none of theirs (or one left out already)."""
    if failure is None:
        return None
    key = location_key(failure.path)
    for output in outputs:
        for path in output.files:
            if location_key(path) == key:
                return failure.damage(output.generation, path)
    return None
