"""Each event in each window, with the generation that owns the window and the one that read
it, after a window change split the generations in event time.

Generation 1 counts in 10-minute windows sliding by 5 and read one partition's offsets 0-40:
minutes 0-39 in order, then at offset 40 an event of minute 8, in a batch whose watermark
had passed 10:24. It wrote through W = 10:38; generation 2 counts in 10-minute tumbling
windows from E = 10:35 on and read offsets 30-60. On generation 2's grid (``Regrid``), every
event has its pair: read by generation 1 before E, by generation 2 from E on; the window
across E is generation 2's, and the late event is late there by generation 1's batch.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_kafka_upgrade._adapters.spark.window_pairs import (
    END,
    OWNER,
    READER,
    START,
    STATE,
    US,
    Regrid,
    owned_pairs,
)
from pyspark_kafka_upgrade._core.reconciliation.scope import GenerationScope, Span
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.verification import PairState
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec, parse_metric

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z
MINUTE_MS = 60_000
TOPIC = "views"
KEYS = ("article_id",)
SLIDING = WindowSpec(10 * MINUTE_MS, 5 * MINUTE_MS, 5 * MINUTE_MS)
TUMBLING = WindowSpec(10 * MINUTE_MS, 10 * MINUTE_MS, 5 * MINUTE_MS)
SPLIT = ReplayFilter(event_time_from_ms=BASE_MS + 35 * MINUTE_MS)
# Offset -> minute: 0-39 in order, 40 is minute 8 (late), 41-59 in order.
MINUTES = {**{o: o for o in range(40)}, 40: 8, **{o: o for o in range(41, 60)}}


def at(minute: int) -> int:
    return BASE_MS + minute * MINUTE_MS


def span(start: int, end: int, batch: int, late_through_minute: int | None) -> Span:
    bound = 0 if late_through_minute is None else at(late_through_minute)
    return Span(TOPIC, 0, start, end, batch, bound, bound)


VIEWS = (parse_metric("views", "count(*)"),)


def scope(
    generation: int,
    window: WindowSpec,
    owns: ReplayFilter,
    next_owns: ReplayFilter | None,
    *,
    through_minute: int,
    spans: tuple[Span, ...],
) -> GenerationScope:
    """A generation that read one partition's ``spans``; the last one (no successor) runs."""
    return GenerationScope(
        generation=generation,
        window=window,
        topics=(TOPIC,),
        keys=KEYS,
        metrics=VIEWS,
        owns=owns,
        next_owns=next_owns,
        written_through_ms=at(through_minute),
        running=next_owns is None,
        spans=spans,
        first_offsets={(TOPIC, 0): min(s.start for s in spans)},
        last_offsets={(TOPIC, 0): max(s.end for s in spans)},
    )


SCOPES = (
    scope(
        1,
        SLIDING,
        ReplayFilter(),
        SPLIT,
        through_minute=38,
        spans=(span(0, 30, 0, None), span(30, 41, 1, 24)),
    ),
    scope(2, TUMBLING, SPLIT, None, through_minute=54, spans=(span(30, 60, 0, None),)),
)


def events_at(spark: SparkSession, minutes: dict[int, int]) -> DataFrame:
    """One partition's events: offset -> minute."""
    return spark.createDataFrame(
        [
            (TOPIC, 0, offset, datetime.fromtimestamp(at(minute) / 1000, tz=UTC), "a1")
            for offset, minute in minutes.items()
        ],
        "topic string, partition int, offset long, event_time timestamp, article_id string",
    )


@pytest.fixture
def events(spark: SparkSession) -> DataFrame:
    return events_at(spark, MINUTES)


def pairs_of(
    frame: DataFrame, size_minutes: int = 10
) -> dict[tuple[int, int], tuple[int, int, str]]:
    """(offset, window start minute) -> (owner, reader, state); each pair once."""
    found: dict[tuple[int, int], tuple[int, int, str]] = {}
    for row in frame.select("offset", START, END, OWNER, READER, STATE).collect():
        key = (int(row["offset"]), (int(row[START]) // US - BASE_MS) // MINUTE_MS)
        assert key not in found, f"{key} paired twice"
        assert int(row[END]) - int(row[START]) == size_minutes * MINUTE_MS * US
        found[key] = (int(row[OWNER]), int(row[READER]), row[STATE])
    return found


def test_on_the_new_grid_each_event_is_read_by_the_generation_that_kept_it(
    events: DataFrame, spark: SparkSession
) -> None:
    regrid = Regrid(TUMBLING, KEYS)
    found = pairs_of(
        owned_pairs(spark, events, SCOPES, KEYS, at(0), None, regrids=[regrid], own_grids=False)
    )

    counted, late = PairState.COUNTED.value, PairState.LATE.value
    # One tumbling window per event, none left out.
    assert sorted(found) == sorted((o, m - m % 10) for o, m in MINUTES.items())
    assert found[(3, 0)] == (1, 1, counted)
    # Late by generation 1's batch that read it: its watermark had passed the window's end.
    assert found[(40, 0)] == (1, 1, late)
    # Across E: generation 2's window, with generation 1's events before E.
    assert found[(33, 30)] == (2, 1, counted)
    assert found[(36, 30)] == (2, 2, counted)
    assert found[(45, 40)] == (2, 2, counted)


def test_the_windows_a_regrid_holds_are_not_paired_on_the_generations_own_grids(
    events: DataFrame, spark: SparkSession
) -> None:
    # 10:00-10:10 is on both grids: paired once, on the regrid's.
    held = Regrid(TUMBLING, KEYS, windows=F.col(END) == F.lit(at(10) * US))
    frame = owned_pairs(spark, events, SCOPES, KEYS, at(0), None, regrids=[held])
    first = frame.where(F.col(START) == F.lit(at(0) * US))
    assert first.count() == 11  # minutes 0-9, and the late event of minute 8
    assert {row[READER] for row in first.select(READER).collect()} == {1}
    # Generation 1's other windows stay on its own grid, read by itself.
    assert frame.where(F.col(START) == F.lit(at(5) * US)).select(OWNER).distinct().collect() == [
        (1,)
    ]


def test_on_a_grid_not_its_own_a_pair_is_read_by_the_latest_generation_that_keeps_it(
    spark: SparkSession,
) -> None:
    # Generation 1 wrote 10-minute tumbling windows through W = 10:38; generation 2 added a
    # metric (window.end > 10:38) and stopped at 10:39, having written none; generation 3
    # counts 5-minute windows from E = 10:30. Generation 2's filter by window end does not
    # keep 10:30-10:35, yet that window is generation 3's, not generation 1's.
    by_end = ReplayFilter(window_end_after_ms=at(38))
    split = ReplayFilter(event_time_from_ms=at(30))
    five = WindowSpec(5 * MINUTE_MS, 5 * MINUTE_MS, 5 * MINUTE_MS)
    scopes = (
        scope(
            1, TUMBLING, ReplayFilter(), by_end, through_minute=38, spans=(span(0, 39, 0, None),)
        ),
        scope(2, TUMBLING, by_end, split, through_minute=39, spans=(span(30, 40, 0, None),)),
        scope(3, five, split, None, through_minute=54, spans=(span(30, 60, 0, None),)),
    )
    events = events_at(spark, {minute: minute for minute in range(60)})

    found = pairs_of(
        owned_pairs(
            spark, events, scopes, KEYS, at(0), None, regrids=[Regrid(five, KEYS)], own_grids=False
        ),
        size_minutes=5,
    )

    assert found[(32, 30)][:2] == (3, 3)
    assert found[(29, 25)][:2] == (1, 1)
    assert found[(20, 20)][:2] == (1, 1)
