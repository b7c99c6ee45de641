"""Use case for `checkpoint show`: find the checkpoint, its sink and its ledger, then report."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pyspark_kafka_upgrade._adapters.ledger.opening import ledger_exists, open_store
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.spark.session import command_session
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._application.checkpoint_show.render import render_report
from pyspark_kafka_upgrade._application.checkpoint_show.report import inspect_checkpoint
from pyspark_kafka_upgrade._application.generation.generations import current_generation
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.sink import Sink
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
    """Report on ``path`` (default: the current generation's checkpoint); ``sink`` is the
    output's location when it is not the one beside the checkpoint."""
    pipeline = settings.pipeline.name
    # Only the filesystem ledger needs Spark; a local session starts only then.
    spark = command_session(settings, purpose="inspect", given=spark)
    store = open_store(settings.ledger, spark=spark) if ledger_exists(settings.ledger) else None
    try:
        # The pipeline root and generation the checkpoint is laid out under, when known:
        # its sink's output is the one beside it.
        beside: tuple[str, int] | None
        if path is None:
            if generation is None:
                generation = 1 if store is None else current_generation(store, pipeline)
            beside = (absolute_uri(settings.pipeline.root), generation)
            path = GenerationLayout(*beside).checkpoint
        else:
            match = _LAYOUT_CHECKPOINT.match(path)
            beside = None
            if match is not None:
                beside = (match.group("root"), int(match.group("generation")))
                generation = generation or beside[1]
            elif generation is None:
                raise UnknownGenerationError(
                    f"{path} is not laid out as <root>/checkpoints/{GENERATION_PREFIX}<n>/"
                    "aggregates, so its generation is unknown; pass --generation N (and --sink "
                    "with its output directory)"
                )
        report = inspect_checkpoint(
            path,
            sink=_sink(settings, generation, beside, sink),
            ledger=store,
            pipeline=pipeline,
            generation=generation,
        )
    finally:
        if store is not None:
            store.close()
    return render_report(report, as_json=as_json)


def _sink(
    settings: Settings, generation: int, beside: tuple[str, int] | None, given: str | None
) -> Sink | None:
    """The sink ``generation``'s output is read from: at ``given``, else the one beside the
    checkpoint; None when neither is known."""
    if beside is None:
        if given is None:
            return None
        root = absolute_uri(settings.pipeline.root)
        return open_sink(settings.sink, root, located={generation: given})
    root, laid_out = beside
    location = given or open_sink(settings.sink, root).location(laid_out)
    return open_sink(settings.sink, root, located={generation: location})
