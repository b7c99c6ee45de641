"""Use case for `checkpoint show`: find the checkpoint, its sink and its ledger, then report."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pyspark_kafka_upgrade._adapters.ledger.opening import ledger_exists, open_store
from pyspark_kafka_upgrade._adapters.spark.session import command_session
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._application.checkpoint_show.report import (
    inspect_checkpoint,
    render_report,
)
from pyspark_kafka_upgrade._application.generation.generations import current_generation
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.values.layout import GENERATION_PREFIX, GenerationLayout

# <root>/checkpoints/generation-<n>/aggregates, as layout.GenerationLayout builds it.
_LAYOUT_CHECKPOINT = re.compile(
    rf"^(?P<root>.*)/checkpoints/{GENERATION_PREFIX}(?P<generation>[1-9][0-9]*)/aggregates/?$"
)


class UnknownGenerationError(PipelineError):
    """A checkpoint path outside the pipeline's layout, given without --generation."""

    exit_code = 2


def show_checkpoint(
    settings: Settings,
    *,
    path: str | None,
    generation: int | None,
    sink: str | None,
    as_json: bool,
    spark: Callable[[], Any] | None = None,
) -> str:
    """Report on ``path`` (default: the current generation's checkpoint)."""
    pipeline = settings.pipeline.name
    # Only the filesystem ledger needs Spark; a local session starts only then.
    spark = command_session(settings, purpose="inspect", given=spark)
    store = open_store(settings.ledger, spark=spark) if ledger_exists(settings.ledger) else None
    try:
        if path is None:
            if generation is None:
                generation = 1 if store is None else current_generation(store, pipeline)
            layout = GenerationLayout(absolute_uri(settings.pipeline.root), generation)
            path, sink = layout.checkpoint, sink or layout.output
        else:
            match = _LAYOUT_CHECKPOINT.match(path)
            if match is not None:
                generation = generation or int(match.group("generation"))
                inferred = GenerationLayout(match.group("root"), int(match.group("generation")))
                sink = sink or inferred.output
            elif generation is None:
                raise UnknownGenerationError(
                    f"{path} is not laid out as <root>/checkpoints/{GENERATION_PREFIX}<n>/"
                    "aggregates, so its generation is unknown; pass --generation N (and --sink "
                    "with its output directory)"
                )
        report = inspect_checkpoint(
            path, sink_uri=sink, ledger=store, pipeline=pipeline, generation=generation
        )
    finally:
        if store is not None:
            store.close()
    return render_report(report, as_json=as_json)
