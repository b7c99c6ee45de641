"""How fast the upgrade planner is on a long ledger, and how much a restart replays.

One run builds a synthetic history of an old generation: ``--batches`` committed batches
over ``--partitions`` partitions, ``--batch-ms`` of event time per batch with some disorder, a
few batches missing from the ledger or marked as gaps, and a checkpoint that kept only its
last 100 ``offsets/`` files. It then times, as the median of ``--repeat`` runs:

  - facts: turning the ledger's offsets texts into the planner's input (what the
    application layer does before planning);
  - plan: ``plan_restart`` over those facts;
  - tighten: ``tighten`` over ``--scan-records`` records of the replay range.

It also prints the replay amplification (records replayed / records that feed an open
window) at the batch level and after tightening. The results are checked against answers
computed independently from the synthetic stream: a wrong result exits with 1, a slow one
never does.

    python bench/planner_speed.py --batches 100000 --partitions 4
    python bench/planner_speed.py --batch-ms 60000    # coarser batches replay more
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from pyspark_kafka_upgrade.model.history import (
    BatchFacts,
    CheckpointBatch,
    CheckpointFacts,
    flat_offsets,
)
from pyspark_kafka_upgrade.model.restart import RestartPlan
from pyspark_kafka_upgrade.model.scans import Scan
from pyspark_kafka_upgrade.planner.restart import plan_restart
from pyspark_kafka_upgrade.planner.tightening import tighten
from pyspark_kafka_upgrade.values.offsets import (
    PartitionKey,
    format_offsets,
)
from pyspark_kafka_upgrade.values.validation import (
    WindowSpec,
)
from pyspark_kafka_upgrade.values.windows import (
    earliest_open_event_ms,
)

TOPIC = "page-views"
BASE_MS = 1_700_000_200_000  # a multiple of ten minutes, so windows start on the hour
DISORDER_MS = 3_000  # how far an event may trail its batch's second
RETAINED = 100  # offsets/ files Spark keeps by default
WINDOW = WindowSpec(duration_ms=600_000, slide_ms=600_000, watermark_delay_ms=120_000)
# Ledger damage: these batches are missing, or carry a gap marker. Far from the end, so the
# planner must prove them harmless from the watermark of the batch after each.
MISSING_EVERY, GAP_EVERY = 9_973, 9_967

T = TypeVar("T")
LedgerText = tuple[int, str | None, str, int, int | None, int | None]


@dataclass(frozen=True)
class Stream:
    """Every partition holds the same records: ``per_batch`` of them per batch, which
    covers ``batch_ms`` of event time."""

    partitions: int
    per_batch: int
    batch_ms: int

    def offset(self, batch_id: int) -> int:
        """Every partition's offset at the start of ``batch_id``."""
        return batch_id * self.per_batch

    def event_time(self, offset: int) -> int:
        """The batch's span of event time, spread over its records, minus a pseudo-random
        lag; the last record of a batch has none, so it is the batch's max."""
        batch_id, position = divmod(offset, self.per_batch)
        lag = 0
        if position != self.per_batch - 1:
            lag = (position * 7_919 + batch_id * 104_729) % DISORDER_MS
        return (
            BASE_MS + (batch_id * self.per_batch + position) * self.batch_ms // self.per_batch - lag
        )

    def max_event_time(self, batch_id: int) -> int:
        return self.event_time(self.offset(batch_id + 1) - 1)


@dataclass(frozen=True)
class History:
    """A synthetic old generation: the ledger as texts, its gaps, and the checkpoint."""

    stream: Stream
    batches: int
    ledger: list[LedgerText]
    gaps: list[int]
    checkpoint: CheckpointFacts


def build_history(stream: Stream, batches: int) -> History:
    ledger: list[LedgerText] = []
    gaps: list[int] = []
    retained: list[CheckpointBatch] = []
    watermark = 0
    for batch_id in range(batches):
        end = stream.offset(batch_id + 1)
        start_text = None if batch_id == 0 else _text(stream.offset(batch_id), stream.partitions)
        latest = stream.max_event_time(batch_id)
        # The min is a lower bound here; the planner does not use it.
        earliest = BASE_MS + batch_id * stream.batch_ms - DISORDER_MS
        text = _text(end, stream.partitions)
        if batch_id % MISSING_EVERY != 5:
            ledger.append((batch_id, start_text, text, watermark, earliest, latest))
        if batch_id % GAP_EVERY == 7:
            gaps.append(batch_id)
        if batch_id >= batches - RETAINED:
            ends = {(TOPIC, p): end for p in range(stream.partitions)}
            retained.append(CheckpointBatch(batch_id, ends, watermark))
        # Batch maxima rise, so the max so far is this batch's.
        watermark = max(watermark, latest - WINDOW.watermark_delay_ms)
    checkpoint = CheckpointFacts(batches - 1, tuple(retained), next_watermark_ms=watermark)
    return History(stream, batches, ledger, gaps, checkpoint)


def _text(offset: int, partitions: int) -> str:
    return format_offsets({TOPIC: dict.fromkeys(range(partitions), offset)})


def facts_of(history: History) -> list[BatchFacts]:
    """What the application layer does before planning: parse each offsets text."""
    return [
        BatchFacts(
            batch_id=batch_id,
            start_offsets=None if start is None else flat_offsets(start),
            end_offsets=flat_offsets(end),
            watermark_ms=watermark,
            min_event_time_ms=low,
            max_event_time_ms=high,
        )
        for batch_id, start, end, watermark, low, high in history.ledger
    ]


def plan_of(history: History, facts: list[BatchFacts]) -> RestartPlan:
    return plan_restart(
        window=WINDOW,
        checkpoint=history.checkpoint,
        ledger=facts,
        gap_batch_ids=history.gaps,
        initial_offsets={(TOPIC, p): 0 for p in range(history.stream.partitions)},
    )


def scan_of(stream: Stream) -> Scan:
    def scan(partition: PartitionKey, start: int, end: int) -> Iterator[tuple[int, int | None]]:
        for offset in range(start, end):
            yield offset, stream.event_time(offset)

    return scan


@dataclass(frozen=True)
class Expected:
    restart_batch: int
    restart_offset: int
    tightened_offset: int
    feeding_per_partition: int


def expected_of(history: History) -> Expected:
    """The answers, from the stream itself rather than from the planner's bookkeeping."""
    stream = history.stream
    watermark = history.checkpoint.watermark_ms
    assert watermark is not None
    t_min = earliest_open_event_ms(watermark, WINDOW)
    first = next(b for b in range(history.batches) if stream.max_event_time(b) >= t_min)
    end = stream.offset(history.batches)
    feeding = [o for o in range(stream.offset(first), end) if stream.event_time(o) >= t_min]
    return Expected(first, stream.offset(first), feeding[0], len(feeding))


def median_seconds(action: Callable[[], T], repeat: int) -> tuple[float, T]:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


def check(plan: RestartPlan, tightened: RestartPlan, history: History, want: Expected) -> list[str]:
    partitions = range(history.stream.partitions)
    wrong = []
    if plan.restart_batch != want.restart_batch:
        wrong.append(f"restart batch {plan.restart_batch}, expected {want.restart_batch}")
    if plan.restart_offsets != {(TOPIC, p): want.restart_offset for p in partitions}:
        wrong.append(f"restart offsets {plan.starting_offsets}, expected {want.restart_offset}")
    if tightened.restart_offsets != {(TOPIC, p): want.tightened_offset for p in partitions}:
        wrong.append(
            f"tightened offsets {tightened.starting_offsets}, expected {want.tightened_offset}"
        )
    summary = tightened.tightening
    feeding = want.feeding_per_partition * history.stream.partitions
    if summary is None or summary.feeding_records != feeding:
        wrong.append(f"feeding records {summary and summary.feeding_records}, expected {feeding}")
    return wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=100_000, help="ledger batches (100000)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions (4)")
    parser.add_argument(
        "--scan-records",
        type=int,
        default=1_000_000,
        help="about how many records the tightening scan reads, all partitions (1000000)",
    )
    parser.add_argument(
        "--batch-ms", type=int, default=1_000, help="event time per batch, in ms (1000)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each step (5)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    # The replay covers at most about (window + delay + disorder) of event time, ~723 batches
    # of a second; the records per batch set how many records the tightening scan reads.
    replay_ms = WINDOW.duration_ms + WINDOW.watermark_delay_ms + DISORDER_MS
    replay_batches = max(1, replay_ms // args.batch_ms)
    per_batch = max(1, args.scan_records // (args.partitions * replay_batches))
    stream = Stream(args.partitions, per_batch, args.batch_ms)
    history = build_history(stream, args.batches)
    want = expected_of(history)

    facts_s, facts = median_seconds(lambda: facts_of(history), args.repeat)
    plan_s, plan = median_seconds(lambda: plan_of(history, facts), args.repeat)
    tighten_s, tightened = median_seconds(lambda: tighten(plan, scan_of(stream)), args.repeat)
    summary = tightened.tightening
    assert summary is not None

    results = {
        "batches": args.batches,
        "partitions": args.partitions,
        "ledger_records": len(history.ledger),
        "plan_seconds": plan_s,
        "facts_from_text_seconds": facts_s,
        "scanned_records": summary.batch_level_records,
        "tighten_seconds": tighten_s,
        "tighten_records_per_second": summary.batch_level_records / tighten_s,
        "restart_batch": plan.restart_batch,
        "records_to_replay_batch_level": plan.records_to_replay,
        "records_to_replay_tightened": tightened.records_to_replay,
        "feeding_records": summary.feeding_records,
        "amplification_batch_level": summary.batch_level_amplification,
        "amplification_tightened": summary.amplification,
    }
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"plan_restart over {args.batches:,} batches: {plan_s * 1000:.1f} ms (median)")
        print(f"  + facts from the ledger's offsets texts: {facts_s * 1000:.1f} ms")
        print(
            f"tighten over {summary.batch_level_records:,} records: {tighten_s:.2f} s "
            f"({results['tighten_records_per_second']:,.0f} records/s)"
        )
        print(
            f"replay amplification: batch level {summary.batch_level_amplification:.4f}, "
            f"tightened {summary.amplification:.4f} "
            f"({summary.feeding_records:,} records feed open windows)"
        )
    wrong = check(plan, tightened, history, want)
    for problem in wrong:
        print(f"WRONG: {problem}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
