"""The handoff's record: the old generation takes C only while its watermark is below it,
hands over once a committed batch reached it, and C must be a window's end still ahead."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import support.plans as plan_documents
from pyspark_kafka_upgrade._domain.records.handoff import (
    Handoff,
    HandoffAck,
    check_boundary,
    handed_over,
)
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import PlanningError
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec

MINUTE = 60_000
C = 1_795_344_000_000  # 2026-11-22T10:40:00Z, a multiple of ten minutes
TEN_MINUTES = WindowSpec(10 * MINUTE, 10 * MINUTE, MINUTE)
SLIDING = WindowSpec(10 * MINUTE, 4 * MINUTE, MINUTE)  # ends at k * 4 min + 10 min


def test_the_old_generation_takes_c_while_its_watermark_is_below_it() -> None:
    answered = Handoff(C).acknowledge(
        batch_id=7, batch_watermark_ms=C - 1, quarantine_end_offsets='{"t":{"0":5}}', at_ms=9
    )
    assert answered.acknowledged == HandoffAck(7, C - 1, '{"t":{"0":5}}', 9)
    assert answered.refused is None
    assert not answered.pending


@pytest.mark.parametrize("watermark", [C, C + 1])
def test_a_watermark_at_or_after_c_is_refused_and_says_why(watermark: int) -> None:
    answered = Handoff(C).acknowledge(
        batch_id=7, batch_watermark_ms=watermark, quarantine_end_offsets="{}", at_ms=9
    )
    assert answered.acknowledged is None
    assert answered.refused is not None
    assert "batch 7" in answered.refused
    assert "2026-11-22T10:40:00" in answered.refused
    assert not answered.pending


def test_a_request_is_pending_until_answered() -> None:
    assert Handoff(C).pending


def test_handed_over_once_a_committed_batch_ran_with_a_watermark_at_c() -> None:
    assert not handed_over(C, None)
    assert not handed_over(C, C - 1)
    assert handed_over(C, C)
    assert handed_over(C, C + 10 * MINUTE)


@pytest.mark.parametrize("window", [TEN_MINUTES, SLIDING])
def test_c_must_be_a_window_end(window: WindowSpec) -> None:
    end = C if window is TEN_MINUTES else 4 * MINUTE * 7_480_600 + 10 * MINUTE
    check_boundary(end, window, end - 1)
    with pytest.raises(PlanningError, match="not the end of a window") as refused:
        check_boundary(end + MINUTE, window, end - 1)
    # The two window ends around it, so that the next command can be typed.
    assert str(refused.value).count("2026-") == 3


def test_a_c_the_watermark_reached_is_refused_naming_the_next_end() -> None:
    with pytest.raises(PlanningError, match="already reached") as refused:
        check_boundary(C, TEN_MINUTES, C + 3 * MINUTE)
    assert "2026-11-22T10:50:00" in str(refused.value)


def test_a_plan_keeps_its_handoff_through_json_and_reviewing_forgets_the_answer() -> None:
    acknowledged = Handoff(C).acknowledge(
        batch_id=3, batch_watermark_ms=C - MINUTE, quarantine_end_offsets="{}", at_ms=1
    )
    plan = UpgradePlan.from_json(plan_documents.sample_plan_document())
    handing = replace(plan, handoff=acknowledged)
    assert UpgradePlan.from_json(json.loads(json.dumps(handing.to_json()))) == handing
    assert handing.as_reviewed().handoff == Handoff(C)


def test_a_plan_written_before_handoffs_is_an_ordinary_upgrade() -> None:
    document = plan_documents.sample_plan_document()
    document.pop("handoff", None)
    assert UpgradePlan.from_json(document).handoff is None
