"""Filling topics with page views the windowed job aggregates, in bounded chunks."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

import support.pipelines as pipelines
from pyspark_kafka_upgrade import testing

# Records per produce() call: bounds the producer's memory, whatever --records says.
_CHUNK = 50_000
_PRODUCE_TIMEOUT_S = 120.0
# Event times of consecutive page views: 300,000 events span about 50 ten-minute windows.
EVENT_STEP_MS = 100


def fill_topic(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    make: Callable[[range], Iterable[testing.Record]],
) -> None:
    """Create ``topic`` and produce ``records`` records, ``make`` building each chunk's."""
    testing.create_topic(bootstrap, topic, partitions)
    for start in range(0, records, _CHUNK):
        testing.produce(
            bootstrap,
            topic,
            make(range(start, min(start + _CHUNK, records))),
            timeout=_PRODUCE_TIMEOUT_S,
        )


def page_views(indices: range, partitions: int, articles: Sequence[str]) -> list[testing.Record]:
    """Valid page views number ``indices``: the windowed job aggregates every one of them."""
    first = pipelines.BASE_MS + indices.start * EVENT_STEP_MS
    return pipelines.page_views(
        articles, range(first, first + len(indices) * EVENT_STEP_MS, EVENT_STEP_MS), partitions
    )


def page_view_topic(
    bootstrap: str,
    prefix: str,
    records: int,
    partitions: int,
    articles: Sequence[str],
    say: Callable[[str], None],
) -> str:
    """A new topic of ``records`` page views (:func:`page_views`); its name."""
    topic = testing.unique_topic(prefix)
    say(f"filling {topic}: {records:,} page views in {partitions} partitions ...")
    started = time.perf_counter()
    fill_topic(
        bootstrap,
        topic,
        records,
        partitions,
        lambda indices: page_views(indices, partitions, articles),
    )
    elapsed = time.perf_counter() - started
    say(f"  filled in {elapsed:.1f} s ({records / elapsed:,.0f} records/s)")
    return topic
