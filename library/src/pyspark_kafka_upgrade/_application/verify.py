"""Use case for `verify`: was anything lost or written twice, on the team's own data?

Gather once (the ledger's generations and batches, each checkpoint's committed batches, the
brokers' earliest offsets), decide purely (``reconcile.scope``: who owns each window, which
batch read each offset, which offsets to read back), compute in Spark
(``spark.recompute``: the windows again from the records, against every generation's
committed output, read back through the pipeline's ``Sink``), then render
(``reconciliation.verify_words``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from pyspark_kafka_upgrade._adapters.checkpoint.reader import checkpoint_facts, read_checkpoint
from pyspark_kafka_upgrade._adapters.kafka.connector import open_metadata, read_kafka_range
from pyspark_kafka_upgrade._adapters.kafka.initial_offsets import load_initial_offsets
from pyspark_kafka_upgrade._adapters.ledger.opening import ledger_exists, open_store
from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._adapters.sink.reading import read_around_damage
from pyspark_kafka_upgrade._adapters.spark.progress_bar import job_progress
from pyspark_kafka_upgrade._adapters.spark.recompute import reconcile
from pyspark_kafka_upgrade._adapters.spark.session import local_session_factory
from pyspark_kafka_upgrade._adapters.spark.spark_errors import failed_file
from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._core.formats.format_errors import CheckpointError
from pyspark_kafka_upgrade._core.query.recipe import Parsing
from pyspark_kafka_upgrade._core.reconciliation.scope import (
    GenerationScope,
    ReadPlan,
    default_from_ms,
    generation_scopes,
    read_plan,
)
from pyspark_kafka_upgrade._core.reconciliation.verify_words import clock, render_report
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.backfill import BackfillCommit
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile
from pyspark_kafka_upgrade._domain.records.history import CheckpointBatch, ledger_facts
from pyspark_kafka_upgrade._domain.records.ledger import GenerationRecord
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import NoLedgerError
from pyspark_kafka_upgrade._domain.records.signature import PipelineSignature
from pyspark_kafka_upgrade._domain.records.sink import GenerationOutput
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.records.verification import (
    GenerationFacts,
    QuarantinedRecord,
    VerifyFacts,
    VerifyReport,
)
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.offsets import PartitionKey, flatten
from pyspark_kafka_upgrade._domain.values.outcome import Outcome

Session = SparkSession | Callable[[], SparkSession]


class NothingToVerifyError(PipelineError):
    """No generation has committed a batch in the range: there is nothing to compare.

    Exit 2, not 1: a script must tell "nothing checked" from "something lost".
    """

    exit_code = 2


class UnknownGenerationError(PipelineError):
    """``--generation`` names a generation the ledger does not know."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class VerifyRange:
    """What to verify: windows from ``from_ms`` (default: around the last upgrade) to
    ``to_ms`` (default: what the pipeline has read), of some generations (default: all)."""

    from_ms: int | None = None
    to_ms: int | None = None
    generations: tuple[int, ...] | None = None


def verify_command(
    settings: Settings,
    scope: VerifyRange,
    *,
    as_json: bool = False,
    master: str | None = None,
    spark: Session | None = None,
) -> Outcome:
    """`verify`: the report, and exit code 1 when anything was lost, written twice or differs."""
    session = (
        spark
        if spark is not None
        else local_session_factory(settings, purpose="verify", master=master)
    )
    report = verify_pipeline(settings, scope, spark=session, progress=True)
    text = json.dumps(report.to_json(), indent=2) if as_json else render_report(report)
    return Outcome(text, 0 if report.ok else 1)


def verify_pipeline(
    settings: Settings, scope: VerifyRange, *, spark: Session, progress: bool = False
) -> VerifyReport:
    """Reconcile the output of ``settings``' pipeline with its source; the typed report.

    Committed files that are damaged (gone, another size, no access: ``Sink.outputs``) are
    left out and named in the report; so is a file Spark then finds it cannot read (a
    checksum, a footer), after which the reconciliation runs again without it
    (``sink.reading.read_around_damage``, bounded).
    """
    sessions = spark if callable(spark) else (lambda: spark)
    facts = gather(settings, sessions)
    session = sessions()
    root = absolute_uri(settings.pipeline.root)
    sink = open_sink(settings.sink, root)
    # The windows backfills own, judged by their query.
    backfills = sink.backfills()
    rules = Parsing(
        events=settings.project.events,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        max_value_bytes=settings.events.max_value_bytes,
    )

    def attempt(outputs: Sequence[GenerationOutput]) -> VerifyReport:
        readable = [output for output in outputs if output.has_output]
        written = sink.read(session, readable) if readable else None
        return verify_facts(
            facts,
            scope,
            spark=session,
            read_back=lambda plan: read_kafka_range(session, settings.kafka, plan.start, plan.end),
            written=written,
            rules=rules,
            progress=progress,
            damaged=[file for output in outputs for file in output.damaged],
            backfills=backfills,
        )

    return read_around_damage(sink, sink.outputs(), attempt, failed_file=failed_file)


def verify_facts(
    facts: VerifyFacts,
    scope: VerifyRange,
    *,
    spark: SparkSession,
    read_back: Callable[[ReadPlan], DataFrame],
    written: DataFrame | None,
    rules: Parsing,
    progress: bool = False,
    damaged: Sequence[DamagedFile] = (),
    backfills: Sequence[BackfillCommit] = (),
) -> VerifyReport:
    """Decide and compute, once the world is read: ``facts`` (ledger, checkpoints, brokers),
    ``written`` (every generation's committed output) and ``read_back`` (the records of a
    read plan). ``damaged``: the committed output ``written`` lacks, for the report. Its own
    function so that a model can feed it histories it made up."""
    scopes = generation_scopes(facts)
    known = {generation.generation for generation in facts.generations}
    wanted = scope.generations
    if wanted is not None and not set(wanted) <= known:
        missing = sorted(set(wanted) - known)
        raise UnknownGenerationError(
            f"generation {', '.join(map(str, missing))} is not in the ledger; it knows "
            f"{', '.join(map(str, sorted(known))) or 'none'}"
        )
    from_ms = scope.from_ms if scope.from_ms is not None else default_from_ms(scopes, facts)
    plan = read_plan(scopes, facts.earliest, from_ms=from_ms, to_ms=scope.to_ms)
    if not plan.start:
        raise NothingToVerifyError(
            f"no committed batch of {facts.pipeline!r} read an event from "
            f"{clock(from_ms)} on: nothing to verify (see --from)"
        )
    raw = read_back(plan)
    with job_progress(spark, "verify", enabled=progress):
        result = reconcile(
            spark,
            raw,
            written,
            scopes,
            rules,
            from_ms=from_ms,
            to_ms=scope.to_ms,
            hidden_event_times=plan.hidden_event_times,
            only=wanted,
            backfills=backfills,
        )
    return VerifyReport(
        pipeline=facts.pipeline,
        from_ms=from_ms,
        to_ms=scope.to_ms,
        generations=tuple(s.generation for s in scopes if wanted is None or s.generation in wanted),
        counts=result.counts,
        findings=result.findings,
        more_findings=result.more_findings,
        events_read=result.events_read,
        late_events=result.late_pairs,
        quarantined=result.quarantined,
        quarantined_sample=tuple(QuarantinedRecord(*record) for record in result.quarantine_sample),
        deleted=plan.deleted,
        notes=tuple(_notes(facts, scopes, plan)),
        offsets_read={"start": plan.offsets_json(plan.start), "end": plan.offsets_json(plan.end)},
        damaged=tuple(damaged),
    )


# -- Gather ------------------------------------------------------------------------------------


def gather(settings: Settings, spark: Callable[[], SparkSession]) -> VerifyFacts:
    """Everything `verify` decides on, read once: ledger, checkpoints, brokers."""
    if not ledger_exists(settings.ledger):
        raise NoLedgerError(
            f"no ledger at {settings.ledger.location}: nothing has run yet, or "
            "ledger.location points elsewhere"
        )
    root = absolute_uri(settings.pipeline.root)
    name = settings.pipeline.name
    # Only the filesystem ledger starts Spark to read itself.
    with open_store(settings.ledger, spark=spark) as store:
        generations = tuple(
            _generation(store, name, record, root) for record in store.generations(name)
        )
    if not generations:
        raise NothingToVerifyError(f"the ledger knows no pipeline {name!r}; check pipeline.name")
    partitions = {key for generation in generations for key in _partitions(generation)}
    client = open_metadata(settings.kafka, purpose="verify")
    try:
        earliest = client.earliest(sorted(partitions))
    finally:
        client.close()
    return VerifyFacts(pipeline=name, generations=generations, earliest=earliest)


def _generation(
    store: OffsetStore, pipeline: str, record: GenerationRecord, root: str
) -> GenerationFacts:
    layout = GenerationLayout(root, record.generation)
    try:
        retained: tuple[CheckpointBatch, ...] = checkpoint_facts(
            read_checkpoint(layout.checkpoint)
        ).batches
    except CheckpointError:
        retained = ()
    initial = load_initial_offsets(layout.initial_offsets)
    return GenerationFacts(
        generation=record.generation,
        status=record.status,
        signature=PipelineSignature.from_json(record.signature),
        plan=None if record.plan is None else UpgradePlan.from_json(record.plan),
        ledger=ledger_facts(store.batches(pipeline, record.generation)),
        checkpoint=retained,
        initial_offsets=None if initial is None else flatten(initial),
        gap_batch_ids=tuple(
            gap.batch_id
            for gap in store.gaps(pipeline, record.generation)
            if gap.batch_id is not None
        ),
    )


def _partitions(generation: GenerationFacts) -> Iterable[PartitionKey]:
    for batch in generation.ledger:
        yield from batch.end_offsets
    for entry in generation.checkpoint:
        yield from entry.end_offsets


# -- Notes: what the report cannot say ---------------------------------------------------------


def _notes(facts: VerifyFacts, scopes: Sequence[GenerationScope], plan: ReadPlan) -> list[str]:
    notes = []
    current = {g.signature.query for g in facts.generations if g.signature.query is not None}
    if len(current) > 1:
        notes.append(
            "the generations ran different query code; each one's windows are recomputed with "
            "the library's steps from the window, keys and metrics its signature recorded"
        )
    for scope in scopes:
        gaps = [span for span in scope.spans if span.batch_id is None]
        if gaps:
            first, last = min(s.start for s in gaps), max(s.end for s in gaps)
            notes.append(
                f"generation {scope.generation}: batches the ledger and checkpoint do not know "
                f"read offsets {first} to {last - 1} of some partitions; windows fed by them are "
                "unclassified unless their values match either way"
            )
    gapped = [g for g in facts.generations if g.gap_batch_ids]
    for generation in gapped:
        notes.append(
            f"generation {generation.generation}: the ledger failed to record batches "
            f"{', '.join(map(str, generation.gap_batch_ids))}; the checkpoint fills in what it "
            "kept"
        )
    if plan.deleted:
        notes.append(
            f"{sum(gone.end - gone.first for gone in plan.deleted)} records were deleted by "
            "retention; windows of the batches that read them are unclassified, not lost"
        )
    return notes
