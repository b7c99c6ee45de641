"""One fully populated record of every kind the library writes as JSON, for the format pins.

Every optional part is filled in (and, where a document leaves a part out when it is
empty, a second sample leaves it empty), so a pin covers each key the document can have.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from pyspark_kafka_upgrade._adapters.storage.run_lock import LockRecord
from pyspark_kafka_upgrade._application.checkpoint_show.report import (
    BatchRange,
    CheckpointReport,
    GapNote,
    LastCommittedBatch,
    LedgerAgreement,
    Mismatch,
    SinkSummary,
)
from pyspark_kafka_upgrade._application.checkpoint_show.report import (
    Verdict as LedgerVerdict,
)
from pyspark_kafka_upgrade._application.connector_fetch import ConnectorJars
from pyspark_kafka_upgrade._application.output_show import GenerationSummary, OutputReport
from pyspark_kafka_upgrade._core.formats.offset_log import SourceOffset
from pyspark_kafka_upgrade._core.planner.late_records import LateRecords
from pyspark_kafka_upgrade._domain.records.advice import Advice, Change, Verdict
from pyspark_kafka_upgrade._domain.records.damage import Damage, DamagedFile, Part
from pyspark_kafka_upgrade._domain.records.ledger import (
    BatchRecord,
    GenerationRecord,
    GenerationStatus,
    LedgerGap,
)
from pyspark_kafka_upgrade._domain.records.plan import PartitionRestart, ReplayScan, UpgradePlan
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.records.restart import (
    PartitionPlan,
    RestartKind,
    RestartPlan,
    RetentionLoss,
)
from pyspark_kafka_upgrade._domain.records.scans import (
    PartitionScan,
    TighteningSummary,
    WaitingScan,
)
from pyspark_kafka_upgrade._domain.records.signature import (
    Aggregate,
    Column,
    EventColumn,
    PipelineSignature,
    SourceSignature,
)
from pyspark_kafka_upgrade._domain.records.verification import (
    DeletedRange,
    EventRef,
    PairState,
    QuarantinedRecord,
    Status,
    VerifyReport,
    WindowFinding,
)
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

W = 1_763_807_040_000  # the old generation's watermark
WINDOW = WindowSpec(600_000, 300_000, 120_000)


def batch_record() -> BatchRecord:
    return BatchRecord(
        pipeline="page-views",
        generation=2,
        batch_id=7,
        query_id="q-1",
        run_id="r-1",
        batch_timestamp_ms=1_763_900_000_000,
        start_offsets='{"views":{"0":10}}',
        end_offsets='{"views":{"0":20}}',
        batch_watermark_ms=W,
        input_rows=10,
        min_event_time_ms=W - 5_000,
        max_event_time_ms=W + 5_000,
        malformed_rows=1,
        recorded_at_ms=1_763_900_000_500,
    )


def first_batch_record() -> BatchRecord:
    """A query's first batch, without rows: its optional facts are None."""
    return BatchRecord(
        pipeline="page-views",
        generation=1,
        batch_id=0,
        query_id="q-0",
        run_id="r-0",
        batch_timestamp_ms=1_763_800_000_000,
        start_offsets=None,
        end_offsets='{"views":{"0":0}}',
        batch_watermark_ms=0,
        input_rows=0,
        min_event_time_ms=None,
        max_event_time_ms=None,
        malformed_rows=0,
        recorded_at_ms=1_763_800_000_100,
    )


def generation_record() -> GenerationRecord:
    return GenerationRecord(
        pipeline="page-views",
        generation=2,
        status=GenerationStatus.RUNNING,
        signature={"format_version": 2, "window": {"duration_ms": 600_000}},
        plan={"format_version": 1, "pipeline": "page-views"},
        created_at_ms=1_763_900_000_000,
        updated_at_ms=1_763_900_000_700,
    )


def first_generation_record() -> GenerationRecord:
    return GenerationRecord(
        pipeline="page-views",
        generation=1,
        status=GenerationStatus.RETIRED,
        signature={"format_version": 2},
        plan=None,
        created_at_ms=1_763_800_000_000,
        updated_at_ms=1_763_800_000_000,
    )


def ledger_gap() -> LedgerGap:
    return LedgerGap("page-views", 2, 8, "the store was down", 1_763_900_001_000)


def loose_ledger_gap() -> LedgerGap:
    return LedgerGap("page-views", 2, None, "listener failed", 1_763_900_002_000)


def signature() -> PipelineSignature:
    """Format 2, every part present, a history recorded."""
    return PipelineSignature(
        sources=(
            SourceSignature("kafka", "builtin", ("views", "clicks")),
            SourceSignature("kafka", "python", ()),
        ),
        event_time_source="payload",
        event_time_field="event_time",
        window=WINDOW,
        grouping_keys=("article_id", "country"),
        aggregates=(Aggregate("views", "count(*)"), Aggregate("readers", "count(user_id)")),
        output_schema=(Column("views", "bigint"), Column("readers", "bigint")),
        sink_format="parquet",
        sink_path="file:///data/output/generation-2",
        output_mode="append",
        spark_version="4.0.1",
        events=(EventColumn("article_id", "string", True), EventColumn("ms", "bigint", False)),
        query="sha256:00112233aabbccdd",
        max_watermark_delay_ms=300_000,
    )


def signature_without_history() -> PipelineSignature:
    return PipelineSignature(
        sources=(SourceSignature("kafka", "python", ("views",)),),
        event_time_source="timestamp",
        event_time_field="timestamp",
        window=WindowSpec(600_000, 600_000, 0),
        grouping_keys=(),
        aggregates=(),
        output_schema=(),
        sink_format="parquet",
        sink_path="s3a://bucket/output",
        output_mode="append",
        spark_version="3.5.3",
    )


def advice() -> Advice:
    return Advice(
        Verdict.NEEDS_NEW_CHECKPOINT,
        (
            Change("window.duration_ms", 300_000, 600_000, True, "the state holds windows"),
            Change("grouping_keys", ["a"], ["a", "b"], True, "the state is keyed"),
            Change("sink.path", "x", None, False, "the sink moves"),
            Change("events", [{"name": "a", "type": "string"}], {"k": 1.5}, False, "fine"),
        ),
    )


def plan() -> UpgradePlan:
    """Partitions restarted every way a plan knows, scanned and not, stamped by apply and run."""
    return UpgradePlan(
        pipeline="page-views",
        root="file:///data",
        from_generation=1,
        to_generation=2,
        last_committed_batch=3,
        watermark_ms=W,
        window=WINDOW,
        restart_batch=2,
        replay_filter=ReplayFilter(window_end_after_ms=W, event_time_from_ms=W - 900_000),
        late_before_event_ms=W - 600_000,
        partitions=(
            PartitionRestart(
                "clicks",
                0,
                restart_offset=-2,
                quarantine_offset=-2,
                old_end_offset=None,
                kind=RestartKind.SUBSCRIBED,
                reason="newly subscribed",
            ),
            PartitionRestart(
                "views",
                0,
                restart_offset=20,
                quarantine_offset=40,
                old_end_offset=40,
                kind=RestartKind.FIRST_FEEDING_RECORD,
                reason="offset 20 holds the first feeding record",
                lost_records=3,
                replay_scan=ReplayScan(15, 25, 1, 2, 18, 20),
                waiting_scan=WaitingScan(("views", 0), 40, 55, 15, 1, 2, 4),
            ),
            PartitionRestart(
                "views",
                1,
                restart_offset=7,
                quarantine_offset=9,
                old_end_offset=9,
                kind=RestartKind.FIRST_FEEDING_BATCH,
                reason="batch 2 started it here",
                replay_scan=ReplayScan(7, 2, 0, 0, None, 2),
            ),
            PartitionRestart(
                "views",
                2,
                restart_offset=None,
                quarantine_offset=None,
                old_end_offset=12,
                kind=RestartKind.UNSUBSCRIBED,
                reason="no longer subscribed",
            ),
        ),
        notes=("the ledger missed batch 1", "retention deleted 3 records"),
        advice=advice(),
        from_signature="sha256:0123456789abcdef",
        to_signature=signature(),
        parser_digest="sha256:fedcba9876543210",
        created_at_ms=1_763_900_000_000,
        applied_at_ms=1_763_900_000_500,
        consumed_at_ms=1_763_900_001_000,
    )


def unscanned_plan() -> UpgradePlan:
    """A plan of nothing to rebuild, not yet applied, whose advice found no change."""
    return UpgradePlan(
        pipeline="page-views",
        root="s3a://bucket/root",
        from_generation=2,
        to_generation=3,
        last_committed_batch=0,
        watermark_ms=0,
        window=WindowSpec(600_000, 600_000, 0),
        restart_batch=None,
        replay_filter=ReplayFilter(),
        late_before_event_ms=None,
        partitions=(
            PartitionRestart("views", 0, 5, 5, 5, RestartKind.NOTHING_TO_REBUILD, "nothing"),
        ),
        notes=(),
        advice=Advice(Verdict.SAME, ()),
        from_signature="sha256:aaaaaaaaaaaaaaaa",
        to_signature=signature_without_history(),
        parser_digest=None,
        created_at_ms=1_763_900_000_000,
    )


def damaged_file() -> DamagedFile:
    return DamagedFile(
        generation=2,
        part=Part.COMMITTED_FILE,
        path="file:///data/output/generation-2/part-00000-a%20b.parquet",
        damage=Damage.WRONG_SIZE,
        detail="has 3215 bytes where the sink log committed 3211",
    )


def verify_report() -> VerifyReport:
    lost = WindowFinding(
        window_start_ms=W - 600_000,
        window_end_ms=W,
        keys={"article_id": "a-1", "country": None},
        status=Status.LOST,
        owner=2,
        writers=(),
        expected={"views": 2, "share": 0.5},
        written=None,
        events=(
            EventRef("views", 0, 41, W - 500_000, PairState.SKIPPED.value, None),
            EventRef("views", 1, 7, W - 400_000, PairState.COUNTED.value, 3),
        ),
        more_events=5,
    )
    twice = WindowFinding(
        window_start_ms=W,
        window_end_ms=W + 600_000,
        keys={"article_id": "b-2"},
        status=Status.WRITTEN_TWICE,
        owner=None,
        writers=(1, 2),
        expected={"views": 3},
        written={"views": 3},
    )
    return VerifyReport(
        pipeline="page-views",
        from_ms=W - 3_600_000,
        to_ms=W + 3_600_000,
        generations=(1, 2),
        counts={"exact": 40, "lost": 1, "written twice": 1},
        findings=(lost, twice),
        more_findings=2,
        events_read=1_234,
        late_events=3,
        quarantined=1,
        quarantined_sample=(QuarantinedRecord("views", 0, 17, "not JSON"),),
        deleted=(DeletedRange("views", 1, 0, 5),),
        notes=("generation 2: the ledger failed to record batches 4",),
        offsets_read={"start": {"views": {"0": 0}}, "end": {"views": {"0": 50}}},
        damaged=(
            damaged_file(),
            DamagedFile(
                1,
                Part.SINK_LOG,
                "file:///data/output/generation-1/_spark_metadata",
                Damage.NO_ACCESS,
                "cannot be read (permission denied)",
            ),
        ),
    )


def open_verify_report() -> VerifyReport:
    """Up to what the pipeline read, nothing found, nothing damaged."""
    return VerifyReport(
        pipeline="page-views",
        from_ms=0,
        to_ms=None,
        generations=(1,),
        counts={},
        findings=(),
        more_findings=0,
        events_read=0,
        late_events=0,
        quarantined=0,
        quarantined_sample=(),
        deleted=(),
        notes=(),
    )


def restart_plan() -> RestartPlan:
    return RestartPlan(
        window=WINDOW,
        last_committed_batch=3,
        watermark_ms=W,
        earliest_open_event_ms=W - 600_000,
        restart_batch=2,
        partitions=(
            PartitionPlan(
                ("views", 0),
                20,
                40,
                "offset 20 holds the first feeding record",
                RestartKind.FIRST_FEEDING_RECORD,
            ),
            PartitionPlan(("views", 1), -2, 9, "earliest", RestartKind.NEW_PARTITION),
        ),
        notes=("a note",),
        data_loss=(RetentionLoss(("views", 0), 20, 23),),
        tightening=TighteningSummary(
            (
                PartitionScan(("views", 0), 15, 20, 40, 25, 1, 20, 18, 2),
                PartitionScan(("views", 1), 7, 7, 9, 2, 0, 2, None),
            )
        ),
    )


def plain_restart_plan() -> RestartPlan:
    return RestartPlan(
        window=WindowSpec(600_000, 600_000, 0),
        last_committed_batch=0,
        watermark_ms=0,
        earliest_open_event_ms=-600_000,
        restart_batch=None,
        partitions=(PartitionPlan(("views", 0), 5, 5, "nothing", RestartKind.NOTHING_TO_REBUILD),),
    )


def late_records() -> LateRecords:
    return LateRecords(
        before_event_ms=W - 600_000,
        by_window_end=True,
        partitions=(
            WaitingScan(("views", 0), 40, 55, 15, 1, 2, 4),
            WaitingScan(("views", 1), 9, 10, 1, 0, 0, 1),
        ),
    )


def checkpoint_report() -> CheckpointReport:
    return CheckpointReport(
        checkpoint="file:///data/checkpoints/generation-2/aggregates",
        pipeline="page-views",
        generation=2,
        query_id="q-1",
        last_committed=LastCommittedBatch(
            batch_id=7,
            log_version=1,
            batch_watermark_ms=W,
            batch_timestamp_ms=1_763_900_000_000,
            next_batch_watermark_ms=W + 60_000,
            sources=(
                SourceOffset("0", '{"views":{"0":20}}', True),
                SourceOffset("1", None, False),
            ),
        ),
        planned_not_committed=(8,),
        retained_batches=(BatchRange(0, 5), BatchRange(7, 7)),
        sink=SinkSummary(
            uri="file:///data/output/generation-2",
            batches=(BatchRange(0, 7),),
            last_batch_id=7,
            compact_batch_id=None,
            live_files=12,
            last_batch_matches_checkpoint=True,
            damaged=(damaged_file(),),
        ),
        ledger=LedgerAgreement(
            verdict=LedgerVerdict.DISAGREES,
            store="sqlite:///data/ledger.db",
            last_batch_id=7,
            same_last_batch=True,
            compared_batches=6,
            missing_batches=(BatchRange(6, 6),),
            ahead_batches=(),
            mismatches=(Mismatch(5, "end_offsets", '{"views":{"0":18}}', '{"views":{"0":19}}'),),
            gaps=(GapNote(6, "the store was down", 1_763_900_001_000), GapNote(None, "x", 1)),
        ),
    )


def bare_checkpoint_report() -> CheckpointReport:
    """Before the first commit, without a sink or a ledger."""
    return CheckpointReport(
        checkpoint="file:///data/checkpoints/generation-1/aggregates",
        pipeline="page-views",
        generation=1,
        query_id=None,
        last_committed=None,
        planned_not_committed=(),
        retained_batches=(),
        sink=None,
        ledger=LedgerAgreement(
            verdict=LedgerVerdict.NO_LEDGER,
            store=None,
            last_batch_id=None,
            same_last_batch=None,
            compared_batches=0,
            missing_batches=(),
            ahead_batches=(),
            mismatches=(),
            gaps=(),
        ),
    )


def output_report() -> OutputReport:
    start = datetime(2025, 11, 22, 10, 10, tzinfo=UTC)
    return OutputReport(
        output="file:///data/output",
        file_format="parquet",
        generations=(
            GenerationSummary(1, "file:///data/output/generation-1", 4, 3),
            GenerationSummary(2, "file:///data/output/generation-2", None, 0),
        ),
        order_by=("window_start", "generation", "article_id"),
        columns=("window_start", "generation", "article_id", "views", "share"),
        numeric=frozenset({"views", "share"}),
        rows=(
            (start, 1, "a-1", 3, Decimal("0.50")),
            (start, 1, None, 2, float("nan")),
        ),
    )


def lock_record() -> LockRecord:
    return LockRecord(
        token="0123456789abcdef",
        purpose="upgrade apply",
        host="worker-3",
        host_id="boot/pid:[4026531836]",
        pid=4242,
        process_start="123456",
        acquired_at_ms=1_763_900_000_000,
        heartbeat_at_ms=1_763_900_010_000,
        lease_ms=60_000,
    )


def connector_jars() -> ConnectorJars:
    return ConnectorJars(
        spark_version="4.0.1",
        package="org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1",
        jars=("/cache/a.jar", "/cache/b.jar"),
        seconds=1.25,
        delta_package="io.delta:delta-spark_2.13:4.0.0",
        delta_jars=("/cache/delta-spark_2.13-4.0.0.jar", "/cache/delta-storage-4.0.0.jar"),
    )
