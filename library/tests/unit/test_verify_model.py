"""`verify` against an independent model of what each generation counted, over generated
histories.

Hypothesis makes up a history: a topic that starts with one or two partitions and may grow,
events produced out of order (some late, some malformed), generations that each run a few
micro-batches (some with a no-data batch after them) and are upgraded one into the next.
The model, ``testing._simulator`` (Spark's append-mode rules as measured, FACTS §6; it
shares no code with `verify`), plays every generation: what it read, its watermarks, the
pairs it dropped as late, what it wrote and what it still holds. The ledger's and the
checkpoints' facts are written from the model's batches, as the listener would record them,
and `verify`'s decision and Spark job (``verify_facts``) judge the model's output, read back
from the model's records.

What the model expects:

- No fault: `verify` says OK. Every (event, window) pair that the generation owning the
  window neither wrote nor holds is "late by design", and `verify` counts exactly those.
- A fault, drawn at random: a written row removed (that window lost), a row copied into
  another generation (written twice), a value changed (different), or an upgrade plan that
  restarts a partition past records the new generation had to count (each window it has
  written since with such a record is lost; one still open is not judged yet).

CI runs a small number of histories (``VERIFY_MODEL_EXAMPLES``, default 20); the closing
note of the issue that added this test reports a full-size run.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

import support.plans as plans
from pyspark_kafka_upgrade._adapters.kafka.schema import spark_schema
from pyspark_kafka_upgrade._application.verify import (
    NothingToVerifyError,
    VerifyRange,
    verify_facts,
)
from pyspark_kafka_upgrade._core.query.recipe import Parsing
from pyspark_kafka_upgrade._core.reconciliation.scope import ReadPlan
from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.records.history import BatchFacts, CheckpointBatch
from pyspark_kafka_upgrade._domain.records.ledger import GenerationStatus
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, UpgradePlan
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from pyspark_kafka_upgrade._domain.records.signature import (
    Aggregate,
    Column,
    PipelineSignature,
    SourceSignature,
)
from pyspark_kafka_upgrade._domain.records.verification import (
    GenerationFacts,
    Status,
    VerifyFacts,
    VerifyReport,
)
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._simulator import AppendQuery, Record, Windows

TOPIC = "views"
MINUTE = 60_000
BASE_MS = 1_763_805_600_000  # 2025-11-22T10:00:00Z
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
KEYS = ("a1", "a2")
EXAMPLES = int(os.environ.get("VERIFY_MODEL_EXAMPLES", "20"))
FAULTS = ("none", "none", "drop", "copy", "bump", "skip")

# WindowKey: (window start, window end, article)
WindowKey = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class Filter:
    """A generation's replay filter, as the model reads it: it keeps the pair (t, window
    end) when ``end > after_ms`` and ``t >= from_event_ms`` (each bound when set)."""

    after_ms: int | None = None
    from_event_ms: int | None = None

    def keeps(self, time_ms: int, window_end: int) -> bool:
        return (self.after_ms is None or window_end > self.after_ms) and (
            self.from_event_ms is None or time_ms >= self.from_event_ms
        )

    @property
    def splits_in_event_time(self) -> bool:
        """A window change: the old generation's windows open at the split are nobody's."""
        return self.after_ms is None and self.from_event_ms is not None


@dataclass
class Generation:
    number: int
    windows: Windows
    query: AppendQuery
    plan: UpgradePlan | None
    filter: Filter
    # Records it was told to skip (the "skip" fault): (partition, offset) pairs.
    skipped: set[tuple[int, int]] = field(default_factory=set)

    @property
    def spec(self) -> WindowSpec:
        return WindowSpec(self.windows.size_ms, self.windows.slide_ms, self.windows.delay_ms)

    @property
    def written_through_ms(self) -> int:
        return max(batch.watermark_ms for batch in self.query.batches)


@dataclass
class History:
    topic: dict[int, list[Record]]
    generations: list[Generation]
    fault: str
    described: list[str]


# -- Making up a history -------------------------------------------------------------------


WINDOWS = (
    Windows(10 * MINUTE, 10 * MINUTE, 0),
    Windows(10 * MINUTE, 10 * MINUTE, 5 * MINUTE),
    Windows(10 * MINUTE, 5 * MINUTE, 2 * MINUTE),
    Windows(10 * MINUTE, 5 * MINUTE, 5 * MINUTE),
    Windows(15 * MINUTE, 15 * MINUTE, 3 * MINUTE),
)


def make_history(data: st.DataObject) -> History:
    draw = data.draw
    windows = draw(st.sampled_from(WINDOWS), label="windows")
    topic: dict[int, list[Record]] = {p: [] for p in range(draw(st.integers(1, 2), "partitions"))}
    fault = draw(st.sampled_from(FAULTS), label="fault")
    described = [f"fault {fault}"]
    clock = BASE_MS
    ids = iter(range(1_000_000))
    generations: list[Generation] = []
    count = draw(st.integers(1, 3), label="generations")
    for number in range(1, count + 1):
        if number > 1 and draw(st.integers(0, 2), label="window change") == 0:
            windows = draw(st.sampled_from(WINDOWS), label="new windows")
        generation = start_generation(
            data, number, generations, topic, windows, fault == "skip" and number == count
        )
        generations.append(generation)
        described.append(
            f"generation {number}: {windows}, {generation.filter}, "
            f"plan {None if generation.plan is None else dict(generation.plan.restart_offsets)}"
        )
        for _ in range(draw(st.integers(1, 4), label="batches")):
            if draw(st.integers(0, 9), label="grow") == 0 and len(topic) < 4:
                topic[len(topic)] = []
                described.append(f"  partition {len(topic) - 1} added")
            for _ in range(draw(st.integers(0, 6), label="events")):
                partition = draw(st.sampled_from(sorted(topic)), label="partition")
                malformed = draw(st.integers(0, 11), label="malformed") == 0
                # Mostly moving forward, sometimes far behind: late, or out of order.
                time_ms = clock + draw(st.integers(-25, 6), label="minute") * MINUTE
                clock = max(clock, time_ms)
                key = draw(st.sampled_from(KEYS), label="key")
                topic[partition].append(Record(next(ids), None if malformed else time_ms, key))
            query = generation.query
            until = {}
            for partition, records in sorted(topic.items()):
                begin = query_position(generation, partition)
                until[partition] = draw(
                    st.integers(begin, len(records)), label=f"read to, partition {partition}"
                )
            outcome = query.run_batch(until)
            described.append(
                f"  batch {outcome.batch_id}: to {outcome.end_offsets}, "
                f"watermark {outcome.watermark_ms}"
            )
            if query.no_data_batch_due and draw(st.booleans(), label="no-data batch"):
                query.run_no_data_batch()
                described.append("  no-data batch")
    return History(topic, generations, fault, described)


def query_position(generation: Generation, partition: int) -> int:
    """Where the generation's next batch starts reading ``partition``."""
    query = generation.query
    if query.batches and partition in query.batches[-1].end_offsets:
        return query.batches[-1].end_offsets[partition]
    if generation.plan is not None:
        offset = generation.plan.restart_offsets.get((TOPIC, partition), -2)
        return 0 if offset < 0 else offset
    return 0


def start_generation(
    data: st.DataObject,
    number: int,
    before: Sequence[Generation],
    topic: dict[int, list[Record]],
    windows: Windows,
    skip: bool,
) -> Generation:
    """The first generation reads from the earliest offsets; each later one starts from a
    plan made by the model (DESIGN §4):

    - W is the old generation's last batch's watermark, or its own filter's bound if that is
      later (a generation stopped early left those windows to the one before it).
    - Same window: the new one keeps the pairs of windows ending after W. New window: the
      generations split in event time at E, the end of the last window the old one wrote.
      An earlier split is carried on.
    - Each partition restarts at the first record the old generation read that the new
      filter keeps in some window (its end offset if none; the earliest if it never had it).
    """
    if number == 1:
        return Generation(1, windows, AppendQuery(topic, windows), None, Filter())
    old = before[-1]
    last = old.query.batches[-1]
    w = max(last.watermark_ms, old.filter.after_ms or 0)
    carried = old.filter.from_event_ms
    if (windows.size_ms, windows.slide_ms) == (old.windows.size_ms, old.windows.slide_ms):
        new_filter = Filter(w, carried)
    else:
        slide, size = old.windows.slide_ms, old.windows.size_ms
        split = (w - size) // slide * slide + size  # the last old window ending by W
        new_filter = Filter(None, split if carried is None else max(split, carried))
    restart: dict[int, int] = {}
    for partition, end in last.end_offsets.items():
        feeding = [
            offset
            for offset in range(end)
            if (time := topic[partition][offset].time_ms) is not None
            and any(new_filter.keeps(time, window_end) for _, window_end in windows.of(time))
        ]
        restart[partition] = min(feeding, default=end)
    # A partition the old generation never had starts at the earliest offset (-2).
    offsets = {partition: restart.get(partition, -2) for partition in sorted(topic)}
    skipped: set[tuple[int, int]] = set()
    if skip:
        # The fault: one partition restarts later than the records it must replay (perhaps
        # past the old end, or past the earliest offset of a partition new to it).
        partition = data.draw(st.sampled_from(sorted(offsets)), label="skipped partition")
        begin = max(offsets[partition], 0)
        later = min(
            data.draw(st.integers(begin + 1, len(topic[partition]) + 1), label="skip to"),
            len(topic[partition]),
        )
        skipped = {(partition, offset) for offset in range(begin, later)}
        offsets[partition] = later
    plan = dataclasses.replace(
        plans.sample_plan(),
        pipeline=TOPIC,
        from_generation=number - 1,
        to_generation=number,
        last_committed_batch=last.batch_id,
        watermark_ms=w,
        window=old.spec,
        replay_filter=ReplayFilter(
            window_end_after_ms=new_filter.after_ms, event_time_from_ms=new_filter.from_event_ms
        ),
        partitions=tuple(
            PartitionRestart(
                TOPIC,
                partition,
                offset,
                offset,
                last.end_offsets.get(partition),
                RestartKind.FIRST_FEEDING_RECORD if offset >= 0 else RestartKind.SUBSCRIBED,
                "the model's",
            )
            for partition, offset in offsets.items()
        ),
    )
    query = AppendQuery(
        topic,
        windows,
        starting_offsets={p: 0 if offset < 0 else offset for p, offset in offsets.items()},
        replay_after_ms=new_filter.after_ms,
        replay_from_event_ms=new_filter.from_event_ms,
    )
    return Generation(number, windows, query, plan, new_filter, skipped)


# -- The facts the ledger and checkpoints would hold, and the output -------------------------


def keyed(offsets: Mapping[int, int]) -> dict[PartitionKey, int]:
    return {(TOPIC, partition): offset for partition, offset in sorted(offsets.items())}


def facts_of(history: History) -> VerifyFacts:
    last = len(history.generations)
    return VerifyFacts(
        pipeline=TOPIC,
        generations=tuple(
            GenerationFacts(
                generation=generation.number,
                status=GenerationStatus.RUNNING
                if generation.number == last
                else GenerationStatus.RETIRED,
                signature=signature(generation.spec),
                plan=generation.plan,
                ledger=tuple(
                    BatchFacts(
                        batch.batch_id,
                        None if batch.start_offsets is None else keyed(batch.start_offsets),
                        keyed(batch.end_offsets),
                        batch.watermark_ms,
                        batch.min_event_time_ms,
                        batch.max_event_time_ms,
                        f"run-{generation.number}",
                    )
                    for batch in generation.query.batches
                ),
                checkpoint=tuple(
                    CheckpointBatch(batch.batch_id, keyed(batch.end_offsets), batch.watermark_ms)
                    for batch in generation.query.batches
                ),
                initial_offsets=None,
            )
            for generation in history.generations
        ),
        earliest={(TOPIC, partition): 0 for partition in history.topic},
    )


def signature(window: WindowSpec) -> PipelineSignature:
    return PipelineSignature(
        sources=(SourceSignature("kafka", "python", (TOPIC,)),),
        event_time_source="payload",
        event_time_field="event_time",
        window=window,
        grouping_keys=("article_id",),
        aggregates=(Aggregate("views", "count(*)"),),
        output_schema=(Column("article_id", "string"), Column("views", "bigint")),
        sink_format="parquet",
        sink_path="file:///model/output",
        output_mode="append",
        spark_version="4.2.0",
    )


def value_of(record: Record) -> bytes:
    if record.time_ms is None:
        return b"{not json"
    moment = EPOCH + timedelta(milliseconds=record.time_ms)
    return json.dumps(
        {
            "article_id": record.key,
            "user_id": "u1",
            "event_time": moment.isoformat().replace("+00:00", "Z"),
        }
    ).encode()


def read_back(spark: SparkSession, history: History, plan: ReadPlan) -> DataFrame:
    rows = [
        (
            str(offset).encode(),
            value_of(record),
            TOPIC,
            partition,
            offset,
            EPOCH + timedelta(milliseconds=BASE_MS),
            0,
        )
        for (topic, partition), start in plan.start.items()
        for offset, record in enumerate(history.topic[partition])
        if start <= offset < plan.end[(topic, partition)]
    ]
    return spark.createDataFrame(rows, spark_schema(include_headers=False))


OutputRow = tuple[int, int, str, int, int]  # start, end, article, views, generation


def written_rows(history: History) -> list[OutputRow]:
    return sorted(
        (start, end, key, len(ids), generation.number)
        for generation in history.generations
        for (start, end, key), ids in generation.query.written.items()
    )


def output_frame(spark: SparkSession, rows: Sequence[OutputRow]) -> DataFrame | None:
    if not rows:
        return None
    return spark.createDataFrame(
        [
            (
                EPOCH + timedelta(milliseconds=start),
                EPOCH + timedelta(milliseconds=end),
                key,
                views,
                generation,
            )
            for start, end, key, views, generation in rows
        ],
        "window_start timestamp, window_end timestamp, article_id string, views bigint, "
        "generation int",
    )


# -- What the model expects ----------------------------------------------------------------


def owned_pairs(history: History, time_ms: int) -> list[tuple[Generation, int, int]]:
    """The (generation, window start, window end) pairs of an event at ``time_ms``, by the
    spec (DESIGN §7): each pair belongs to the generation whose filter keeps it and whose
    successor's does not, in that generation's own windows. A generation followed by a
    window change wrote none of its windows still open at the split: they are nobody's."""
    owned = []
    generations = history.generations
    for index, generation in enumerate(generations):
        following = generations[index + 1].filter if index + 1 < len(generations) else None
        for start, end in generation.windows.of(time_ms):
            if not generation.filter.keeps(time_ms, end):
                continue
            if following is not None and following.keeps(time_ms, end):
                continue
            if (
                following is not None
                and following.splits_in_event_time
                and end > generation.written_through_ms
            ):
                continue
            owned.append((generation, start, end))
    return owned


def late_pairs(history: History, plan: ReadPlan) -> tuple[int, set[WindowKey]]:
    """The pairs read back that their owner neither wrote nor holds (late by design), and
    the windows of pairs the "skip" fault hid from their owner that it has written since.

    The running generation may not have read a record yet (it reads slower than the one
    before it read): in a window still open to it, that pair is pending, neither.
    """
    late = 0
    lost: set[WindowKey] = set()
    running = history.generations[-1]
    read_by_running = {
        record.event_id for batch in running.query.batches for record in batch.records
    }
    for (_, partition), start in plan.start.items():
        for offset in range(start, plan.end[(TOPIC, partition)]):
            record = history.topic[partition][offset]
            if record.time_ms is None:
                continue
            for generation, window_start, window_end in owned_pairs(history, record.time_ms):
                group = (window_start, window_end, record.key)
                query = generation.query
                if record.event_id in (*query.written.get(group, ()), *query.held(group)):
                    continue
                if (partition, offset) in generation.skipped:
                    if window_end <= generation.written_through_ms:
                        lost.add(group)
                    continue
                if (
                    generation is running
                    and record.event_id not in read_by_running
                    and window_end > running.written_through_ms
                ):
                    continue  # pending: it will be read, and its window is open
                late += 1
    return late, lost


def fail_windows(report: VerifyReport) -> dict[WindowKey, Status]:
    return {
        (f.window_start_ms, f.window_end_ms, str(f.keys.get("article_id"))): f.status
        for f in report.findings
        if f.status.fails
    }


# -- The test --------------------------------------------------------------------------------


RULES = Parsing(
    events=PROJECT.events,
    time_source="payload",
    time_field="event_time",
    max_value_bytes=load_settings(PROJECT, env={}).settings.events.max_value_bytes,
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
    # Each history costs a Spark job: shrinking a failure takes minutes, so only on request
    # (the assertion prints the whole history either way).
    phases=[Phase.explicit, Phase.reuse, Phase.generate]
    + ([Phase.shrink] if os.environ.get("VERIFY_MODEL_SHRINK") else []),
)
@given(data=st.data())
def test_verify_agrees_with_the_model_over_generated_histories(
    spark: SparkSession, data: st.DataObject
) -> None:
    history = make_history(data)
    rows = written_rows(history)
    expected_fails: dict[WindowKey, Status] = {}
    if history.fault in ("drop", "copy", "bump") and rows:
        index = data.draw(st.integers(0, len(rows) - 1), label="row")
        start, end, key, views, generation = rows[index]
        if history.fault == "drop":
            rows = rows[:index] + rows[index + 1 :]
            expected_fails[(start, end, key)] = Status.LOST
        elif history.fault == "copy":
            # Into another generation's output, or its own (a file copied twice).
            into = data.draw(st.integers(1, len(history.generations)), label="copied into")
            rows = [*rows, (start, end, key, views, into)]
            expected_fails[(start, end, key)] = Status.WRITTEN_TWICE
        else:
            rows[index] = (start, end, key, views + 1, generation)
            expected_fails[(start, end, key)] = Status.DIFFERENT
    captured: list[ReadPlan] = []

    def reader(plan: ReadPlan) -> DataFrame:
        captured.append(plan)
        return read_back(spark, history, plan)

    story = "\n".join(history.described)

    def verify() -> VerifyReport:
        return verify_facts(
            facts_of(history),
            VerifyRange(from_ms=0),
            spark=spark,
            read_back=reader,
            written=output_frame(spark, rows),
            rules=RULES,
        )

    read_valid = any(
        batch.max_event_time_ms is not None
        for generation in history.generations
        for batch in generation.query.batches
    )
    skipped_valid = any(
        history.topic[partition][offset].time_ms is not None
        for generation in history.generations
        for partition, offset in generation.skipped
    )
    try:
        report = verify()
    except NothingToVerifyError:
        # Nothing to compare (exit 2): right only when no generation read a valid event and
        # none skipped one it had to read.
        assert not read_valid and not skipped_valid, story
        return
    # When nothing valid was read, verify may still read back the offsets a restart
    # skipped: then it must find nothing to hold against the output.
    assert read_valid or skipped_valid or report.windows == 0, story
    [plan] = captured
    late, lost = late_pairs(history, plan)
    expected_fails.update(dict.fromkeys(lost, Status.LOST))

    assert fail_windows(report) == expected_fails, story
    assert report.ok == (not expected_fails), story
    assert report.count(Status.UNCLASSIFIED) == 0, story
    if history.fault == "none" or (history.fault == "skip" and not lost):
        assert report.late_events == late, story


def test_the_model_sees_a_loss_verify_must_report() -> None:
    """The model itself can fail: a history whose plan skips records that generation 2 had
    to count gives expected lost windows (a control on the oracle, no Spark needed)."""
    windows = Windows(10 * MINUTE, 10 * MINUTE, 0)
    topic = {0: [Record(0, BASE_MS + MINUTE, "a1"), Record(1, BASE_MS + 12 * MINUTE, "a1")]}
    first = AppendQuery(topic, windows)
    first.run_batch({0: 1})
    first.run_no_data_batch()  # W = 10:01: the window 10:00-10:10 is open
    w = first.batches[-1].watermark_ms
    plan = dataclasses.replace(
        plans.sample_plan(),
        replay_filter=ReplayFilter(window_end_after_ms=w),
        partitions=(PartitionRestart(TOPIC, 0, 2, 2, 1, RestartKind.FIRST_FEEDING_RECORD, "x"),),
    )
    topic[0].append(Record(2, BASE_MS + 25 * MINUTE, "a1"))
    # The fault: generation 2 starts at 2, past offset 0 (it had to replay) and offset 1.
    second = AppendQuery(topic, windows, starting_offsets={0: 2}, replay_after_ms=w)
    second.run_batch({0: 3})
    second.run_no_data_batch()  # its watermark reaches 10:25: 10:00-10:20 are written
    history = History(
        topic,
        [
            Generation(1, windows, first, None, Filter()),
            Generation(2, windows, second, plan, Filter(w), {(0, 0), (0, 1)}),
        ],
        "skip",
        [],
    )

    late, lost = late_pairs(history, ReadPlan({(TOPIC, 0): 0}, {(TOPIC, 0): 3}, (), ()))

    assert lost == {
        (BASE_MS, BASE_MS + 10 * MINUTE, "a1"),
        (BASE_MS + 10 * MINUTE, BASE_MS + 20 * MINUTE, "a1"),
    }
    assert late == 0
