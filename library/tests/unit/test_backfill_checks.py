"""What `upgrade backfill` refuses before reading a record."""

from __future__ import annotations

from pyspark_kafka_upgrade._core.reconciliation.backfill_checks import refusal
from pyspark_kafka_upgrade._core.reconciliation.scope import GenerationScope, Span
from pyspark_kafka_upgrade._domain.records.replay_filter import ReplayFilter
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

WINDOW = WindowSpec(600_000, 300_000, 300_000)


def scope(number: int, *spans: Span, through_ms: int | None = None) -> GenerationScope:
    return GenerationScope(
        generation=number,
        window=WINDOW,
        topics=("t",),
        keys=("article_id",),
        metrics=(),
        owns=ReplayFilter(),
        next_owns=None,
        written_through_ms=through_ms,
        running=True,
        spans=spans,
        first_offsets={},
        last_offsets={},
    )


READ = Span("t", 0, 0, 10, 0, 0, 0)


def test_a_current_generation_that_committed_a_batch_may_be_backfilled_with() -> None:
    assert refusal([scope(1, READ), scope(2, READ)], "p") is None
    # A batch that read nothing still moved the watermark: it committed.
    assert refusal([scope(1, READ), scope(2, through_ms=1)], "p") is None


def test_before_the_new_generation_commits_a_rollback_is_still_possible_so_it_refuses() -> None:
    refused = refusal([scope(1, READ), scope(2)], "p")
    assert refused is not None
    assert refused.startswith("generation 2 has not committed a batch yet: run it first")
    assert "`upgrade rollback` to generation 1" in refused


def test_a_pipeline_that_wrote_nothing_has_nothing_to_backfill() -> None:
    assert (
        refusal([], "p") == "no generation of 'p' has run a batch: nothing was written to backfill"
    )
    assert "has not committed a batch: nothing was written" in (refusal([scope(1)], "p") or "")
