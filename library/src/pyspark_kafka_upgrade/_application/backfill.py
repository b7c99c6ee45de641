"""Use case for `upgrade backfill`: the current query's values for the windows already written.

After an upgrade that adds a metric, the windows earlier generations wrote lack it; after a
naive restart or a file deleted by hand, some windows are lost or wrong. A backfill
recomputes them from the records Kafka retains, with the current generation's query, over
exactly the events each window's owner counted (the same batches, the same late events left
out, and the events it should have read but never did), and commits them as one backfill
that every reader and `verify` obey from then on.

    gather   the ledger, checkpoints and brokers, as `verify` does (``verify.gather``)
    decide   which offsets hold events of the range, what retention took (``scope``)
    --plan   stop here: the offsets, their records, the windows retention left partial
    compute  each window's values and whether it needs them (``spark.backfill_values``)
    write    the rows and the commit (``Sink.write_backfill``): a file sink's directory of
             its own, then its commit file; a Delta table's one commit replacing the rows

A kill at any point leaves the output as it was (no commit yet: nobody reads the files) or
backfilled (the commit is written at once); running it again finds what is left to do, and
once nothing is, writes nothing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import SparkSession

from pyspark_kafka_upgrade._adapters.kafka.connector import read_kafka_range
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.spark.backfill_values import REASONS, backfill_values
from pyspark_kafka_upgrade._adapters.spark.progress_bar import job_progress
from pyspark_kafka_upgrade._adapters.spark.session import local_session_factory, session_conf
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._application.verify import gather
from pyspark_kafka_upgrade._core.query.recipe import Parsing
from pyspark_kafka_upgrade._core.reconciliation.backfill_checks import refusal
from pyspark_kafka_upgrade._core.reconciliation.backfill_words import render_backfill
from pyspark_kafka_upgrade._core.reconciliation.scope import (
    GenerationScope,
    generation_scopes,
    read_plan,
)
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit
from pyspark_kafka_upgrade._domain.records.backfill_report import (
    BackfillReport,
    LeftSample,
    LeftWindows,
    OlderQuery,
)
from pyspark_kafka_upgrade._domain.records.signature import Aggregate
from pyspark_kafka_upgrade._domain.records.sink import require_committed
from pyspark_kafka_upgrade._domain.values.clock import now_ms
from pyspark_kafka_upgrade._domain.values.outcome import Outcome

Session = SparkSession | Callable[[], SparkSession]


# The moments a kill -9 test stops it at (``after_step``): its rows written and not yet
# committed, then committed.
BACKFILL_STEPS = ("rows written", "committed")


class BackfillRefusedError(PipelineError):
    """A backfill this version cannot do exactly: nothing is written."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    """Windows from ``from_ms`` (default: as far back as Kafka retains) to ``to_ms``
    (default: what the pipeline has written); ``plan_only``: say, change nothing."""

    from_ms: int | None = None
    to_ms: int | None = None
    plan_only: bool = False


def backfill_command(
    settings: Settings,
    request: BackfillRequest,
    *,
    as_json: bool = False,
    master: str | None = None,
    spark: Session | None = None,
    after_step: Callable[[str], None] = lambda step: None,
) -> Outcome:
    session = (
        spark
        if spark is not None
        else local_session_factory(settings, purpose="backfill", master=master)
    )
    report = backfill(settings, request, spark=session, progress=not as_json, after_step=after_step)
    text = json.dumps(report.to_json(), indent=2) if as_json else render_backfill(report)
    return Outcome(text, 0)


def backfill(
    settings: Settings,
    request: BackfillRequest,
    *,
    spark: Session,
    progress: bool = False,
    after_step: Callable[[str], None] = lambda step: None,
) -> BackfillReport:
    """Plan the backfill of ``request``'s range and, unless ``plan_only``, do it.

    ``after_step`` is called with each of ``BACKFILL_STEPS`` once done (tests kill there)."""
    sessions = spark if callable(spark) else (lambda: spark)
    facts = gather(settings, sessions)
    scopes = generation_scopes(facts)
    refused = refusal(scopes, facts.pipeline)
    if refused is not None:
        raise BackfillRefusedError(f"upgrade backfill: {refused}")
    current = scopes[-1]
    from_ms = request.from_ms if request.from_ms is not None else 0
    plan = read_plan(scopes, facts.earliest, from_ms=from_ms, to_ms=request.to_ms)
    report = BackfillReport(
        pipeline=facts.pipeline,
        generation=current.generation,
        aggregates=tuple(Aggregate(m.name, m.expression) for m in current.metrics),
        applied=False,
        from_ms=from_ms,
        to_ms=request.to_ms,
        older_queries=_older_queries(scopes),
        offsets={"start": plan.offsets_json(plan.start), "end": plan.offsets_json(plan.end)},
        records=sum(plan.end[key] - plan.start[key] for key in plan.start),
        deleted=plan.deleted,
        partial_event_times=plan.hidden_event_times,
    )
    if request.plan_only or not plan.start:
        return report
    session = sessions()
    root = absolute_uri(settings.pipeline.root)
    sink = open_sink(settings.sink, root)
    outputs = [output for output in sink.outputs() if output.has_output]
    written = sink.read(session, require_committed(outputs)) if outputs else None
    rules = Parsing(
        events=settings.project.events,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )
    raw = read_kafka_range(session, settings.kafka, plan.start, plan.end)
    # The stream's own parallelism for its windows, not Spark's 200 shuffle partitions: a
    # backfill's data is the stream's, and each stage would run 200 tasks of next to nothing.
    partitions = {"spark.sql.shuffle.partitions": str(settings.pipeline.state_partitions)}
    with session_conf(session, partitions), job_progress(session, "backfill", enabled=progress):
        values = backfill_values(
            session,
            raw,
            written,
            scopes,
            rules,
            from_ms=from_ms,
            to_ms=request.to_ms,
            hidden_event_times=plan.hidden_event_times,
        )
        number, rows, committed_in = None, 0, None
        if values.windows:
            number = sink.next_backfill()
            rows_frame = values.rows.cache()
            rows = rows_frame.count()
            committed_in = sink.write_backfill(
                rows_frame,
                BackfillCommit(
                    backfill=number,
                    pipeline=facts.pipeline,
                    generation=current.generation,
                    window=current.window,
                    grouping_keys=current.keys,
                    aggregates=report.aggregates,
                    ranges=values.ranges,
                    files=(),
                    windows=values.windows,
                    rows=rows,
                    created_at_ms=now_ms(),
                ),
                rows_written=lambda: after_step(BACKFILL_STEPS[0]),
            )
            after_step(BACKFILL_STEPS[1])
    return dataclasses.replace(
        report,
        applied=True,
        backfill=number,
        committed_in=committed_in,
        windows=values.windows,
        rows=rows,
        ranges=values.ranges,
        left=tuple(
            LeftWindows(reason, values.left[reason])
            for reason in REASONS
            if values.left.get(reason)
        ),
        left_sample=tuple(
            LeftSample(window.start_ms, window.end_ms, window.reason)
            for window in values.left_sample
        ),
    )


def _older_queries(scopes: tuple[GenerationScope, ...]) -> tuple[OlderQuery, ...]:
    """The earlier generations whose windows lack some of the current query's metrics, or
    that counted in other windows (the current grid's windows over their events were never
    written)."""
    current = scopes[-1]
    wanted = {m.name: m.expression for m in current.metrics}
    grid = (current.window.duration_ms, current.window.slide_ms)
    older = []
    for scope in scopes[:-1]:
        had = {m.name: m.expression for m in scope.metrics}
        missing = tuple(name for name, expression in wanted.items() if had.get(name) != expression)
        other = (scope.window.duration_ms, scope.window.slide_ms) != grid
        if missing or other:
            older.append(OlderQuery(scope.generation, missing, scope.window if other else None))
    return tuple(older)
