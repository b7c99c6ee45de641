"""Prove an upgrade on a project's own events: nothing lost, nothing written twice.

``prove_upgrade`` plays the procedure a team follows, on a real broker and the project's own
query: version 1 reads the first events and stops with windows still open; version 2 makes a
change its checkpoint cannot carry, so ``run`` refuses it, ``upgrade plan`` plans a new
generation and ``upgrade apply`` applies it; more events arrive and version 2 runs. Then
every window each generation committed (read through its own ``_spark_metadata``) is
compared with what an uninterrupted run must write, computed here from the events:

- a window is written once the watermark reaches its end (W, from the checkpoint's files);
- each window and key is written by exactly one generation, once;
- each metric has the value the events give it (``approx_count_distinct`` within its 5 %).

The oracle reads the settings (window, keys, metrics) and the events; it shares no code with
the query it checks. The events must not be late: keep their disorder below the watermark
delay, as a test's events easily are.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._oracle as oracle
from pyspark_kafka_upgrade._application.run.bookkeeping import UpgradeRequiredError
from pyspark_kafka_upgrade._application.run.run_command import RunRequest, run_pipeline
from pyspark_kafka_upgrade._application.upgrade.commands import apply_command, plan_command
from pyspark_kafka_upgrade._application.verify import VerifyRange, verify_pipeline
from pyspark_kafka_upgrade._core.reconciliation.verify_words import render_report
from pyspark_kafka_upgrade._core.settings import Settings, load_settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.advice import Verdict
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.verification import VerifyReport
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout, table_location
from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade.testing._connector import connector_under_test
from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackend
from pyspark_kafka_upgrade.testing._kafka.topics import Record, create_topic, produce, unique_topic
from pyspark_kafka_upgrade.testing._ledgers import ledger_overrides

Event = Mapping[str, object]
# (window start ms, window end ms, the grouping keys' values): one output row's identity.
Row = tuple[int, int, tuple[object, ...]]
_RELATIVE = {"approx_count_distinct": 0.05}


@dataclass
class ProofReport:
    """What each generation wrote against what the events say it must, and what `verify`
    said of the same output (its verdict must agree with the oracle's)."""

    plan: UpgradePlan
    expected: dict[Row, dict[str, object]]
    written: dict[Row, list[tuple[int, dict[str, object]]]]  # row -> (generation, metrics)
    different: list[str] = field(default_factory=list)
    settings: Settings | None = None  # version 2's, to run or verify the pipeline again
    verified: VerifyReport | None = None

    @property
    def lost(self) -> list[Row]:
        return sorted(row for row in self.expected if row not in self.written)

    @property
    def written_twice(self) -> list[Row]:
        return sorted(row for row, writers in self.written.items() if len(writers) > 1)

    @property
    def unexpected(self) -> list[Row]:
        return sorted(row for row in self.written if row not in self.expected)

    @property
    def exact(self) -> bool:
        return not (self.lost or self.written_twice or self.unexpected or self.different)

    def explain(self) -> str:
        lines = [
            f"{len(self.expected)} windows and keys expected, {len(self.written)} written: "
            f"{len(self.lost)} lost, {len(self.written_twice)} written twice, "
            f"{len(self.unexpected)} not expected, {len(self.different)} with other values"
        ]
        lines += [f"  lost: {_show(row)}" for row in self.lost[:10]]
        lines += [
            f"  written twice: {_show(row)} by generations "
            f"{[generation for generation, _ in self.written[row]]}"
            for row in self.written_twice[:10]
        ]
        lines += [f"  not expected: {_show(row)}" for row in self.unexpected[:10]]
        lines += [f"  {difference}" for difference in self.different[:10]]
        return "\n".join(lines)


def prove_upgrade(
    project: Project,
    spark: SparkSession,
    kafka_backend: KafkaBackend,
    tmp_path: Path,
    *,
    events: Sequence[Event],
    stop_after: int,
    version_2: Sequence[str],
    partitions: int = 2,
    settings: Sequence[str] = (),
    run: Callable[[Sequence[str]], int] | None = None,
) -> ProofReport:
    """Run version 1 on ``events[:stop_after]``, upgrade to ``version_2`` (settings that need
    a new checkpoint), run it on the rest, and compare every window with the oracle.

    ``settings`` are ``section.key=value`` overrides both versions run with. ``run`` runs one
    version until it has caught up, given its overrides (``--set`` arguments), and returns
    the command's exit code; by default in this process, on ``spark``. Plan and apply always
    run here, as an operator's would.
    """
    bootstrap = kafka_backend.bootstrap_servers
    topic = unique_topic("proof")
    create_topic(bootstrap, topic, partitions)
    base = [*_pipeline_overrides(project, tmp_path, bootstrap, topic), *settings]
    overrides_2 = [*base, *version_2]
    version_1 = load_settings(project, env={}, overrides=base).settings
    upgraded = load_settings(project, env={}, overrides=overrides_2).settings
    records = _records(version_1, events, partitions)

    def in_process(overrides: Sequence[str]) -> int:
        settings = load_settings(project, env={}, overrides=overrides).settings
        try:
            run_pipeline(RunRequest(settings=settings, available_now=True, echo=_quiet), spark)
        except PipelineError as refused:
            return refused.exit_code
        return 0

    runs = run or in_process
    produce(bootstrap, topic, records[:stop_after])
    _expect(runs(base), 0, "version 1")
    _expect(runs(overrides_2), UpgradeRequiredError.exit_code, "version 2 on the old checkpoint")
    plan = UpgradePlan.from_json(
        json.loads(
            plan_command(upgraded, as_json=True, accept_data_loss=False, spark=lambda: spark)
        )
    )
    if plan.advice.verdict is not Verdict.NEEDS_NEW_CHECKPOINT:
        raise AssertionError(
            f"version_2 {list(version_2)} fits on the checkpoint ({plan.advice.verdict}): the "
            "proof needs a change that starts a new generation"
        )
    apply_command(upgraded, accept_data_loss=False, spark=lambda: spark)
    produce(bootstrap, topic, records[stop_after:])
    _expect(runs(overrides_2), 0, "version 2 from the plan")
    report = _compare(spark, version_1, upgraded, events, stop_after, plan)
    report.settings = upgraded
    report.verified = verify_agrees(report, upgraded, spark, events)
    return report


def _pipeline_overrides(project: Project, tmp_path: Path, bootstrap: str, topic: str) -> list[str]:
    """A pipeline of its own for the proof: its topic, its directories and its ledger."""
    return [
        f"pipeline.name={topic}",
        f"pipeline.root={tmp_path / 'pipeline'}",
        f"kafka.bootstrap_servers={bootstrap}",
        f"kafka.topics={topic}",
        "kafka.starting_offsets=earliest",
        f"kafka.connector={connector_under_test(project)}",
        "sink.trigger_interval=1 second",
        *ledger_overrides(project, tmp_path),
    ]


def verify_agrees(
    report: ProofReport, settings: Settings, spark: SparkSession, events: Sequence[Event]
) -> VerifyReport:
    """`verify` over every window of ``events``; it must say what the oracle says."""
    earliest = min(_time_ms(event, settings.events.time_field) for event in events)
    widest = max(settings.window.spec.duration_ms, report.plan.window.duration_ms)
    return verify_says(report.exact, report.explain(), settings, spark, from_ms=earliest - widest)


def verify_says(
    exact: bool, explanation: str, settings: Settings, spark: SparkSession, *, from_ms: int
) -> VerifyReport:
    """`verify` from ``from_ms``; it must agree with an oracle that found ``exact``."""
    verified = verify_pipeline(settings, VerifyRange(from_ms=from_ms), spark=spark)
    if verified.ok != exact:
        raise AssertionError(
            f"verify says {'OK' if verified.ok else 'NOT OK'} but the oracle says "
            f"{'exact' if exact else 'not exact'}:\n{render_report(verified)}\n"
            f"oracle: {explanation}"
        )
    return verified


def _records(settings: Settings, events: Sequence[Event], partitions: int) -> list[Record]:
    """Round robin over the partitions, each record's CreateTime its event time."""
    field_name = settings.events.time_field
    return [
        Record(
            partition=index % partitions,
            key=None,
            value=json.dumps(event).encode(),
            timestamp_ms=_time_ms(event, field_name),
        )
        for index, event in enumerate(events)
    ]


def _expect(code: int, expected: int, what: str) -> None:
    if code != expected:
        raise AssertionError(f"{what} exited {code}, expected {expected}")


def _quiet(line: str) -> None:
    """A run's banner and batch lines, not shown: the report says what matters."""


def _compare(
    spark: SparkSession,
    version_1: Settings,
    upgraded: Settings,
    events: Sequence[Event],
    stop_after: int,
    plan: UpgradePlan,
) -> ProofReport:
    root = version_1.pipeline.root
    generations = {plan.from_generation: version_1, plan.to_generation: upgraded}
    # The watermarks the oracle expects, from the events: each run ends caught up, with a
    # batch at the watermark its newest event set. The checkpoint must agree, or the oracle
    # would expect too little.
    old_w = _newest_ms(version_1, events[:stop_after]) - version_1.window.spec.watermark_delay_ms
    final_w = _newest_ms(upgraded, events) - upgraded.window.spec.watermark_delay_ms
    last = GenerationLayout(root, plan.to_generation)
    _agree("W of the old generation (the plan's)", plan.watermark_ms, old_w)
    _agree("the last watermark", oracle.final_watermark_ms(_local(last.checkpoint)), final_w)
    # The old generation wrote its windows, with its own spec and metrics, up to W; the new
    # one the rest: the windows ending after W, or with a new window spec the windows of the
    # events from the plan's split on.
    split = plan.replay_filter.event_time_from_ms
    expected: dict[Row, dict[str, object]] = {}
    for generation, settings in generations.items():
        new = generation == plan.to_generation
        counted = [
            e
            for e in events
            if split is None or not new or _time_ms(e, settings.events.time_field) >= split
        ]
        expected_rows = _expected(
            settings,
            counted,
            through_ms=final_w if new else old_w,
            after_ms=old_w if new and split is None else None,
        )
        if not expected_rows:
            raise AssertionError(
                f"no window of generation {generation} is expected from these events: the "
                "proof would prove little; give events that close windows on both sides"
            )
        expected.update(expected_rows)
    written: dict[Row, list[tuple[int, dict[str, object]]]] = defaultdict(list)
    for generation, settings in generations.items():
        for row, metrics in _written(spark, settings, generation):
            written[row].append((generation, metrics))
    report = ProofReport(plan=plan, expected=expected, written=dict(written))
    for row, writers in written.items():
        if row in expected:
            for generation, metrics in writers:
                functions = {
                    m.name: m.function for m in generations[generation].aggregation.metric_specs
                }
                report.different += _differences(row, generation, expected[row], metrics, functions)
    return report


def _agree(what: str, found: int, expected: int) -> None:
    if found != expected:
        raise AssertionError(
            f"{what} is {found}, but the events give {expected}: the run did not end caught up"
        )


def _newest_ms(settings: Settings, events: Sequence[Event]) -> int:
    return max(_time_ms(event, settings.events.time_field) for event in events)


def _expected(
    settings: Settings, events: Sequence[Event], *, through_ms: int, after_ms: int | None
) -> dict[Row, dict[str, object]]:
    """The rows of windows ending in (after_ms, through_ms], with their metrics' values."""
    window = settings.window.spec
    grid = oracle.Grid(window.duration_ms, None if window.is_tumbling else window.slide_ms)
    keys = settings.aggregation.keys
    members: dict[Row, list[Event]] = defaultdict(list)
    for event in events:
        time_ms = _time_ms(event, settings.events.time_field)
        for start in grid.starts(time_ms):
            end = start + grid.size_ms
            if end <= through_ms and (after_ms is None or end > after_ms):
                members[(start, end, tuple(event.get(key) for key in keys))].append(event)
    return {
        row: {
            m.name: _metric(m.function, m.column, inside) for m in settings.aggregation.metric_specs
        }
        for row, inside in members.items()
    }


def _metric(function: str, column: str, events: Sequence[Event]) -> object:
    if column == "*":
        return len(events)
    values = [event.get(column) for event in events if event.get(column) is not None]
    if function == "count":
        return len(values)
    if function == "approx_count_distinct":
        return len(set(map(json.dumps, values)))
    if not values:
        return None
    if function == "sum":
        return sum(values)  # type: ignore[arg-type]
    if function == "min":
        return min(values)  # type: ignore[type-var]
    if function == "max":
        return max(values)  # type: ignore[type-var]
    if function == "avg":
        return sum(values) / len(values)  # type: ignore[arg-type]
    raise ValueError(f"the oracle knows no metric function {function!r}")


def _written(
    spark: SparkSession, settings: Settings, generation: int
) -> list[tuple[Row, dict[str, object]]]:
    """Each committed row of one generation, read through its own _spark_metadata, or from
    the Delta table by another engine than the pipeline's (delta-rs, no JVM)."""
    keys = settings.aggregation.keys
    metrics = [metric.name for metric in settings.aggregation.metric_specs]
    rows: Sequence[Any]  # Spark rows, or delta-rs rows as dicts: both are read by name
    if settings.sink.format == "delta":
        # Where the settings put the table, told here apart from the sink under test.
        table = settings.sink.table_location or table_location(settings.pipeline.root)
        rows = delta_rows(table, generation)
    else:
        directory = _local(GenerationLayout(settings.pipeline.root, generation).output)
        if not (directory / "_spark_metadata").is_dir():
            return []
        rows = spark.read.format(settings.sink.format).load(str(directory)).collect()
    return [
        (
            (
                _epoch_ms(row["window_start"]),
                _epoch_ms(row["window_end"]),
                tuple(row[key] for key in keys),
            ),
            {name: row[name] for name in metrics},
        )
        for row in rows
    ]


def delta_rows(table: str, generation: int) -> list[dict[str, Any]]:
    """The rows of ``generation`` in the Delta table at ``table``, as delta-rs reads them:
    what any engine outside Spark sees (none when there is no table yet)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        found = DeltaTable(table)
    except TableNotFoundError:
        return []
    rows: list[dict[str, Any]] = found.to_pyarrow_table().to_pylist()
    return [row for row in rows if row.get("generation") == generation]


def _differences(
    row: Row,
    generation: int,
    expected: Mapping[str, object],
    found: Mapping[str, object],
    functions: Mapping[str, str],
) -> list[str]:
    differences = []
    for name, value in expected.items():
        written = found.get(name)
        if not _close(value, written, _RELATIVE.get(functions.get(name, ""), 0.0)):
            differences.append(
                f"{_show(row)} generation {generation}: {name} is {written!r}, expected {value!r}"
            )
    return differences


def _close(expected: object, found: object, relative: float) -> bool:
    """Equal; within ``relative`` for an approximate metric (approx_count_distinct is
    HyperLogLog++ with a 5 % relative error); floats to rounding."""
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(found, numbers):
        if isinstance(expected, bool) or isinstance(found, bool):
            return expected == found
        tolerance = max(relative * abs(expected), 1e-9 * abs(expected))
        return math.isclose(expected, found, abs_tol=tolerance)
    return expected == found


def _time_ms(event: Event, field_name: str) -> int:
    value = event.get(field_name)
    if not isinstance(value, str):
        raise ValueError(f"event {dict(event)} has no ISO-8601 {field_name!r}")
    return _epoch_ms(datetime.fromisoformat(value.replace("Z", "+00:00")))


def _epoch_ms(moment: datetime) -> int:
    # Spark hands timestamps back naive, in the session's zone, which the tests set to UTC.
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return round(aware.timestamp() * 1000)


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file:"))


def _show(row: Row) -> str:
    start, _, keys = row
    return f"window {datetime.fromtimestamp(start / 1000, tz=UTC):%H:%M} keys {keys}"
