"""The advisor tells a change the checkpoint can carry from one that needs a new one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyspark_kafka_upgrade._core.planner.advisor import advise
from pyspark_kafka_upgrade._domain.records.advice import Verdict
from pyspark_kafka_upgrade._domain.records.signature import max_watermark_delay_ms, with_history

SIGNATURE: dict[str, Any] = {
    "sources": [{"kind": "kafka", "connector": "python", "topics": ["page-views"]}],
    "event_time": {"source": "payload", "field": "event_time"},
    "window": {"duration_ms": 600_000, "slide_ms": 600_000, "watermark_delay_ms": 300_000},
    "grouping_keys": ["article_id"],
    "aggregates": [{"name": "views", "expression": "count(*)"}],
    "output_schema": [
        {"name": "window_start", "type": "timestamp"},
        {"name": "window_end", "type": "timestamp"},
        {"name": "article_id", "type": "string"},
        {"name": "views", "type": "bigint"},
    ],
    "sink": {"format": "parquet", "path": "/data/output/generation-1"},
    "output_mode": "append",
    "spark_version": "4.3.0",
}


def changed(path: str, value: object) -> dict[str, Any]:
    signature = copy.deepcopy(SIGNATURE)
    *parents, leaf = path.split(".")
    node = signature
    for key in parents:
        node = node[key]
    node[leaf] = value
    return signature


def test_an_identical_signature_is_the_same() -> None:
    advice = advise(SIGNATURE, copy.deepcopy(SIGNATURE))
    assert advice.verdict is Verdict.SAME
    assert advice.sentences() == ["The pipeline is unchanged: it runs on its current checkpoint."]


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        ("sources", [{"kind": "kafka", "connector": "python", "topics": ["a", "b"]}], "topics"),
        ("sources", [{"kind": "kafka", "connector": "builtin", "topics": ["page-views"]}], "kind"),
        ("event_time.source", "kafka", "old event time"),
        ("window.duration_ms", 300_000, "old size"),
        ("window.slide_ms", 60_000, "old slide"),
        ("grouping_keys", ["article_id", "user_id"], "key schema"),
        (
            "aggregates",
            [
                {"name": "views", "expression": "count(*)"},
                {"name": "u", "expression": "max(user_id)"},
            ],
            "value schema",
        ),
        ("sink.path", "/elsewhere", "path"),
        ("sink.format", "orc", "path and format"),
        ("output_mode", "update", "output mode"),
        ("spark_version", "5.0.0", "major Spark version"),
    ],
)
def test_changes_spark_cannot_carry_need_a_new_checkpoint(
    path: str, value: object, reason: str
) -> None:
    advice = advise(SIGNATURE, changed(path, value))
    assert advice.verdict is Verdict.NEEDS_NEW_CHECKPOINT
    assert [change.path for change in advice.changes] == [path]
    assert advice.changes[0].needs_new_checkpoint
    assert reason in advice.changes[0].reason
    assert "new checkpoint" in advice.sentences()[-1]


@pytest.mark.parametrize(
    ("path", "value"),
    [("window.watermark_delay_ms", 600_000), ("spark_version", "4.4.1")],
)
def test_changes_the_checkpoint_carries_are_safe(path: str, value: object) -> None:
    advice = advise(SIGNATURE, changed(path, value))
    assert advice.verdict is Verdict.SAFE
    assert not advice.changes[0].needs_new_checkpoint
    assert advice.sentences()[-1].endswith("no upgrade is needed.")


def test_one_unsafe_change_among_safe_ones_needs_a_new_checkpoint() -> None:
    new = changed("window.watermark_delay_ms", 1)
    new["grouping_keys"] = ["user_id"]
    advice = advise(SIGNATURE, new)
    assert advice.verdict is Verdict.NEEDS_NEW_CHECKPOINT
    assert [c.path for c in advice.changes] == ["grouping_keys", "window.watermark_delay_ms"]


def test_an_unknown_part_is_judged_conservatively() -> None:
    advice = advise(SIGNATURE, {**SIGNATURE, "shiny_new_part": 1})
    assert advice.verdict is Verdict.NEEDS_NEW_CHECKPOINT
    assert advice.changes[0].old is None


def test_the_json_form_lists_every_change() -> None:
    advice = advise(SIGNATURE, changed("window.duration_ms", 1))
    assert advice.to_json() == {
        "verdict": "needs_new_checkpoint",
        "changes": [
            {
                "path": "window.duration_ms",
                "old": 600_000,
                "new": 1,
                "needs_new_checkpoint": True,
                "reason": advice.changes[0].reason,
            }
        ],
    }
    assert advice.changes[0].reason.startswith("the state holds windows of the old size; ")


@pytest.mark.parametrize("path", ["window.duration_ms", "window.slide_ms"])
def test_a_window_change_warns_of_the_old_windows_neither_generation_writes(path: str) -> None:
    [change] = advise(SIGNATURE, changed(path, 300_000)).changes
    assert "written by neither generation: a dashboard of the old windows shows a gap" in (
        change.reason
    )
    # A change the replay filter carries on the old grid leaves no gap, and does not say so.
    [keys] = advise(SIGNATURE, changed("grouping_keys", ["user_id"])).changes
    assert "gap" not in keys.reason


def test_a_tumbling_window_resized_says_the_gap_once() -> None:
    # 10 to 15 minutes changes both the size and the slide: one warning, on the first.
    new = changed("window.duration_ms", 900_000)
    new["window"]["slide_ms"] = 900_000
    advice = advise(SIGNATURE, new)
    assert [c.path for c in advice.changes] == ["window.duration_ms", "window.slide_ms"]
    assert "; ".join(advice.sentences()).count("a dashboard of the old windows") == 1


def test_a_run_records_the_largest_watermark_delay_any_run_used() -> None:
    first = with_history(changed("window.watermark_delay_ms", 1_800_000), None)
    assert first["history"] == {"max_watermark_delay_ms": 1_800_000}
    # A later run on the same checkpoint with a shorter delay keeps the longer one.
    second = with_history(SIGNATURE, first)
    assert second["window"] == SIGNATURE["window"]
    assert second["history"] == {"max_watermark_delay_ms": 1_800_000}
    assert max_watermark_delay_ms(second) == 1_800_000
    third = with_history(changed("window.watermark_delay_ms", 3_600_000), second)
    assert max_watermark_delay_ms(third) == 3_600_000


def test_a_signature_recorded_before_the_history_gives_its_own_delay() -> None:
    assert max_watermark_delay_ms(SIGNATURE) == 300_000
    assert max_watermark_delay_ms({}) == 0


def test_the_history_is_not_part_of_the_comparison() -> None:
    recorded = with_history(SIGNATURE, with_history(changed("window.watermark_delay_ms", 1), None))
    assert advise(recorded, copy.deepcopy(SIGNATURE)).verdict is Verdict.SAME
    assert advise(SIGNATURE, recorded).verdict is Verdict.SAME


# -- Format 2: the project's events and query code --------------------------------------------

FORMAT_2: dict[str, Any] = {
    **copy.deepcopy(SIGNATURE),
    "format_version": 2,
    "events": [
        {"name": "article_id", "type": "string", "required": True},
        {"name": "event_time", "type": "timestamp", "required": True},
    ],
    "query": "sha256:0123456789abcdef",
}


def test_a_changed_query_needs_a_new_checkpoint() -> None:
    advice = advise(FORMAT_2, {**FORMAT_2, "query": "sha256:fedcba9876543210"})
    assert advice.verdict is Verdict.NEEDS_NEW_CHECKPOINT
    assert [c.path for c in advice.changes] == ["query"]
    assert "cannot be told without running it" in advice.changes[0].reason


def test_changed_events_alone_fit_on_the_checkpoint() -> None:
    optional_user = [*FORMAT_2["events"], {"name": "user_id", "type": "string", "required": False}]
    advice = advise(FORMAT_2, {**FORMAT_2, "events": optional_user})
    assert advice.verdict is Verdict.SAFE
    assert [c.path for c in advice.changes] == ["events"]


def test_a_format_1_signature_lacks_events_and_query_without_that_being_a_change() -> None:
    # Recorded by a version before signatures held them: what it did not record is not
    # compared, and the advice says so rather than staying silent.
    advice = advise(SIGNATURE, FORMAT_2)
    assert advice.verdict is Verdict.SAFE
    assert {c.path: c.reason for c in advice.changes} == {
        "events": "the old generation's signature predates it",
        "query": "the old generation's signature predates it",
    }
    # Anything else that changed is still judged.
    assert advise(SIGNATURE, changed_2("window.duration_ms", 1)).verdict is (
        Verdict.NEEDS_NEW_CHECKPOINT
    )


def test_the_format_version_itself_is_not_a_change() -> None:
    assert advise({**FORMAT_2, "format_version": 3}, FORMAT_2).verdict is Verdict.SAME


def changed_2(path: str, value: object) -> dict[str, Any]:
    signature = copy.deepcopy(FORMAT_2)
    *parents, leaf = path.split(".")
    node = signature
    for key in parents:
        node = node[key]
    node[leaf] = value
    return signature
