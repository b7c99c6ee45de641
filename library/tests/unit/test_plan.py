"""The upgrade plan as a typed record: each fact once, a lossless JSON round trip, and one
clear line for a document that is not a plan this version applies."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import support.plans as plan_documents
from pyspark_kafka_upgrade._domain.records.advice import Advice, Change, Verdict
from pyspark_kafka_upgrade._domain.records.handoff import Handoff, HandoffAck
from pyspark_kafka_upgrade._domain.records.plan import (
    FORMAT_VERSION,
    PartitionRestart,
    ReplayScan,
    UpgradePlan,
)
from pyspark_kafka_upgrade._domain.records.record_errors import (
    PlanFormatError,
    PlanFormatVersionError,
)
from pyspark_kafka_upgrade._domain.records.replay_filter import (
    ReplayFilter,
)
from pyspark_kafka_upgrade._domain.records.restart import RestartKind
from pyspark_kafka_upgrade._domain.records.scans import WaitingScan
from pyspark_kafka_upgrade._domain.records.signature import (
    Aggregate,
    Column,
    PipelineSignature,
    SourceSignature,
)
from pyspark_kafka_upgrade._domain.values.validation import (
    WindowSpec,
)

MS = st.integers(min_value=0, max_value=4_102_444_800_000)  # up to 2100
COUNT = st.integers(min_value=0, max_value=10**9)
TEXT = st.text(min_size=1, max_size=12)
WINDOW = st.builds(
    lambda size, share, delay: WindowSpec(size, size // share, delay),
    st.sampled_from([1_000, 60_000, 600_000, 3_600_000]),
    st.sampled_from([1, 2, 5]),
    st.integers(min_value=0, max_value=3_600_000),
)
SIGNATURE = st.builds(
    PipelineSignature,
    sources=st.tuples(
        st.builds(
            SourceSignature,
            st.just("kafka"),
            st.sampled_from(["python", "builtin"]),
            st.lists(TEXT, min_size=1, max_size=3).map(tuple),
        )
    ),
    event_time_source=st.sampled_from(["payload", "kafka"]),
    event_time_field=TEXT,
    window=WINDOW,
    grouping_keys=st.lists(TEXT, max_size=3).map(tuple),
    aggregates=st.lists(st.builds(Aggregate, TEXT, TEXT), max_size=3).map(tuple),
    output_schema=st.lists(st.builds(Column, TEXT, TEXT), max_size=4).map(tuple),
    sink_format=st.sampled_from(["parquet", "orc"]),
    sink_path=TEXT,
    output_mode=st.just("append"),
    spark_version=st.sampled_from(["4.0.1", "4.2.0"]),
    max_watermark_delay_ms=st.none() | st.integers(min_value=0, max_value=10**8),
)
FILTER = st.builds(ReplayFilter, st.none() | MS, st.none() | MS)
JSON_VALUE = st.none() | st.integers() | TEXT | st.lists(st.integers(), max_size=3)
ADVICE = st.builds(
    Advice,
    st.sampled_from(list(Verdict)),
    st.lists(st.builds(Change, TEXT, JSON_VALUE, JSON_VALUE, st.booleans(), TEXT), max_size=3).map(
        tuple
    ),
)
REPLAY_SCAN = st.builds(ReplayScan, COUNT, COUNT, COUNT, COUNT, st.none() | COUNT, COUNT)


@st.composite
def partitions(draw: st.DrawFn) -> tuple[PartitionRestart, ...]:
    keys = sorted(draw(st.sets(st.tuples(TEXT, st.integers(0, 500)), max_size=6)))
    made = []
    for topic, number in keys:
        restart = draw(st.none() | st.integers(min_value=-2, max_value=10**9))
        # A partition is in the restart offsets, or the old end offsets, or both.
        old_end = draw(COUNT if restart is None else st.none() | COUNT)
        waiting = draw(
            st.none()
            | st.builds(
                WaitingScan, st.just((topic, number)), COUNT, COUNT, COUNT, COUNT, COUNT, COUNT
            )
        )
        made.append(
            PartitionRestart(
                topic=topic,
                partition=number,
                restart_offset=restart,
                quarantine_offset=None if restart is None else draw(COUNT),
                old_end_offset=old_end,
                kind=draw(st.sampled_from(list(RestartKind))),
                reason=draw(st.text(max_size=40)),
                lost_records=draw(COUNT),
                replay_scan=draw(st.none() | REPLAY_SCAN),
                waiting_scan=waiting,
            )
        )
    return tuple(made)


HANDOFF = st.builds(
    Handoff,
    MS,
    st.none() | st.builds(HandoffAck, st.none() | COUNT, MS, TEXT, MS),
    st.none() | st.text(max_size=30),
)


@st.composite
def upgrade_plans(draw: st.DrawFn) -> UpgradePlan:
    source = draw(st.integers(min_value=1, max_value=50))
    return UpgradePlan(
        pipeline=draw(TEXT),
        root=draw(TEXT),
        from_generation=source,
        to_generation=source + draw(st.integers(min_value=1, max_value=3)),
        last_committed_batch=draw(COUNT),
        watermark_ms=draw(MS),
        window=draw(WINDOW),
        restart_batch=draw(st.none() | COUNT),
        replay_filter=draw(FILTER),
        late_before_event_ms=draw(st.none() | MS),
        partitions=draw(partitions()),
        notes=tuple(draw(st.lists(st.text(max_size=30), max_size=3))),
        advice=draw(ADVICE),
        from_signature=draw(TEXT),
        to_signature=draw(st.none() | SIGNATURE),
        parser_digest=draw(st.none() | TEXT),
        created_at_ms=draw(MS),
        applied_at_ms=draw(st.none() | MS),
        consumed_at_ms=draw(st.none() | MS),
        handoff=draw(st.none() | HANDOFF),
    )


@settings(max_examples=200, deadline=None)
@given(upgrade_plans())
def test_a_plan_round_trips_through_its_json_text(plan: UpgradePlan) -> None:
    text = json.dumps(plan.to_json())
    assert UpgradePlan.from_json(json.loads(text)) == plan


@settings(max_examples=100, deadline=None)
@given(FILTER)
def test_a_replay_filter_is_its_own_description(replay_filter: ReplayFilter) -> None:
    in_plan = replace(plan_documents.sample_plan(), replay_filter=replay_filter)
    assert in_plan.to_json()["replay_filter"] == replay_filter.describe()
    assert ReplayFilter.parse(replay_filter.describe()) == replay_filter


@settings(max_examples=100, deadline=None)
@given(FILTER)
def test_a_replay_filter_explained_keeps_each_term_and_names_its_bound(
    replay_filter: ReplayFilter,
) -> None:
    # People read W and E with their times; a script still finds each term it parsed before.
    described, explained = replay_filter.describe(), replay_filter.explain()
    if not replay_filter.active:
        assert explained == described == "none"
        return
    terms = explained.split(" and ")
    assert len(terms) == len(described.split(" and "))
    for term, before in zip(terms, described.split(" and "), strict=True):
        assert term.startswith(before + " (")
        assert term.endswith(")") and (" (W = " in term or " (E = " in term)


def test_a_replay_filter_explained_reads_w_with_its_time() -> None:
    assert ReplayFilter(window_end_after_ms=1_763_807_680_000).explain() == (
        "window.end > 1763807680000 (W = 2025-11-22T10:34:40Z)"
    )
    assert ReplayFilter(window_end_after_ms=0).explain() == "window.end > 0 (W = not yet set)"


# Facts of DESIGN's "Plan" section, by the key that holds each: every one must appear once.
# The offsets are in DESIGN's one offsets form, as in the checkpoint and the ledger.
FACT_KEYS = (
    "pipeline",
    "from_generation",
    "to_generation",
    "last_committed_batch",
    "watermark_ms",
    "window",
    "restart_offsets",
    "quarantine_offsets",
    "old_end_offsets",
    "replay_filter",
    "records_to_replay",
    "reason",
    "advice",
    "created_at_ms",
    "applied_at_ms",
    "consumed_at_ms",
    "format_version",
)
# Other totals and derived forms must not be stored beside the facts they come from.
DERIVED_KEYS = (
    "late_records",
    "replay_after_ms",
    "replay_from_event_ms",
    "window_changed",
    "partitions_added",
    "starting_offsets",
    "amplification",
)


def key_paths(value: object, path: str = "") -> list[str]:
    """Every key's path, list positions left out: a key inside a list item counts once."""
    found = []
    if isinstance(value, dict):
        for key, child in value.items():
            found.append(f"{path}.{key}".lstrip("."))
            found += key_paths(child, f"{path}.{key}")
    elif isinstance(value, list):
        for child in value:
            found += key_paths(child, f"{path}[]")
    return sorted(set(found))


@settings(max_examples=50, deadline=None)
@given(upgrade_plans())
def test_the_plan_json_holds_each_fact_once_and_nothing_derived(plan: UpgradePlan) -> None:
    paths = key_paths(plan.to_json())
    # Keys of the signature and the advice's changes describe those documents, not the plan.
    own = [p for p in paths if not p.startswith(("to_signature.", "advice.changes"))]
    leaves = Counter(path.rsplit(".", 1)[-1] for path in own)
    for key in FACT_KEYS:
        assert leaves[key] <= 1, f"{key} appears {leaves[key]} times: {sorted(own)}"
    absent = [key for key in FACT_KEYS if leaves[key] == 0]
    assert absent in ([], ["reason"]), absent  # no partition, no reason
    # A scan's own counts, late records among them, are facts of that partition's scan; the
    # partition's offsets are in the plan's offsets texts only.
    document = plan.to_json()
    assert not set(DERIVED_KEYS) & set(document), set(DERIVED_KEYS) & set(document)
    for partition in document["partitions"]:  # type: ignore[attr-defined]
        assert not {"records_to_replay", "restart_offset", "quarantine_offset"} & set(partition)


@pytest.mark.parametrize(
    ("damage", "complaint"),
    [
        (lambda d: d.pop("watermark_ms"), "has no field 'watermark_ms'"),
        (lambda d: d.update(watermark_ms="12"), "'watermark_ms' must be an integer, got str"),
        (lambda d: d.update(watermark_ms=True), "'watermark_ms' must be an integer, got bool"),
        (lambda d: d.update(replay_filter="window.end >= 5"), "replay_filter"),
        (lambda d: d.update(replay_filter="window.end > 5 and event_time >= 1"), "canonical"),
        (lambda d: d["partitions"][0].pop("reason"), "'partitions[0].reason'"),
        (lambda d: d["partitions"][0].update(kind="sideways"), "kind 'sideways'"),
        (lambda d: d.update(quarantine_offsets='{"t":{}}'), "name different partitions"),
        (lambda d: d.update(restart_offsets="{t:0}"), "'restart_offsets'"),
        (lambda d: d.update(records_to_replay=7), "records_to_replay is 7, but its offsets"),
        (lambda d: d["partitions"][0].update(partition=1), "partition 1 is in no offsets text"),
        (lambda d: d["advice"].update(verdict="maybe"), "verdict 'maybe'"),
        (lambda d: d["to_signature"].pop("window"), "to_signature"),
        (lambda d: d.update(to_generation=1), "goes nowhere"),
        (lambda d: d.update(partitions=d["partitions"] * 2), "not those its offsets"),
        (lambda d: d.update(format_version=0), "format version 0"),
    ],
)
def test_a_damaged_document_is_refused_naming_what_is_wrong(damage: Any, complaint: str) -> None:
    document = plan_documents.sample_plan_document()
    damage(document)
    with pytest.raises(PlanFormatError) as refused:
        UpgradePlan.from_json(document)
    assert complaint in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_plan_of_a_newer_format_is_refused_as_such() -> None:
    document = {**plan_documents.sample_plan_document(), "format_version": FORMAT_VERSION + 1}
    with pytest.raises(PlanFormatVersionError, match="newer than"):
        UpgradePlan.from_json(document)


def test_totals_are_computed_from_the_partitions() -> None:
    plan = UpgradePlan.from_json(plan_documents.sample_plan_document())
    assert plan.records_to_replay == 20
    assert plan.starting_offsets == '{"t":{"0":20}}'
    assert plan.quarantine_starting_offsets == '{"t":{"0":40}}'
    assert plan.late_records is None  # nothing was scanned
    assert not plan.window_changed


def legacy_document() -> dict[str, Any]:
    """A plan as the version before typed plans stored it in the ledger, field for field."""
    w = 1_763_807_040_000
    return {
        "pipeline": "page-views",
        "from_generation": 1,
        "to_generation": 2,
        "last_committed_batch": 3,
        "watermark_ms": w,
        "window_changed": False,
        "replay_after_ms": w,
        "replay_from_event_ms": None,
        "replay_filter": f"window.end > {w}",
        "restart_offsets": '{"t":{"0":20,"1":-2}}',
        "quarantine_offsets": '{"t":{"0":40,"1":-2}}',
        "partitions_added": ["t:1"],
        "partitions_dropped": [],
        "records_to_replay": 20,
        "late_before_event_ms": 1_763_806_800_000,
        "late_records": 0,
        "late_scan": None,
        "restart": {
            "last_committed_batch": 3,
            "watermark_ms": w,
            "replay_after_ms": w,
            "replay_filter": f"window.end > {w}",
            "window": {"duration_ms": 600_000, "slide_ms": 600_000, "watermark_delay_ms": 300_000},
            "earliest_open_event_ms": 1_763_806_800_000,
            "restart_batch": 2,
            "restart_offsets": '{"t":{"0":20}}',
            "end_offsets": '{"t":{"0":40}}',
            "records_to_replay": 20,
            "partitions": [
                {
                    "topic": "t",
                    "partition": 0,
                    "restart_offset": 20,
                    "end_offset": 40,
                    "records_to_replay": 20,
                    "reason": "offset 20 holds the first record",
                }
            ],
            "notes": ["a note"],
            "data_loss": [],
            "tightening": None,
        },
        "advice": {"verdict": "needs_new_checkpoint", "changes": []},
        "checkpoint": "/data/checkpoints/generation-2/aggregates",
        "output": "/data/output/generation-2",
        "created_at_ms": 1_763_900_000_000,
        "applied_at_ms": 1_763_900_000_500,
        "consumed_at_ms": None,
    }


def test_a_plan_the_previous_version_stored_is_still_read() -> None:
    # A generation started from such a plan must go on running, be planned from, or be
    # rolled back after the upgrade to this version.
    plan = UpgradePlan.from_json(legacy_document())
    assert plan.starting_offsets == '{"t":{"0":20,"1":-2}}'
    assert plan.quarantine_starting_offsets == '{"t":{"0":40,"1":-2}}'
    assert plan.replay_filter == ReplayFilter(window_end_after_ms=1_763_807_040_000)
    assert (plan.root, plan.from_generation, plan.to_generation) == ("/data", 1, 2)
    assert [(p.key, p.kind, p.reason) for p in plan.partitions] == [
        (("t", 0), RestartKind.FIRST_FEEDING_BATCH, "offset 20 holds the first record"),
        (("t", 1), RestartKind.SUBSCRIBED, "subscribed"),
    ]
    assert plan.applied_at_ms == 1_763_900_000_500 and plan.consumed_at_ms is None
    assert plan.to_signature is None and plan.notes == ("a note",)
    # Stamped by `run` and stored again, it is written in this version's format.
    consumed = plan.consumed(1_763_900_001_000)
    assert UpgradePlan.from_json(json.loads(json.dumps(consumed.to_json()))) == consumed


def test_a_document_without_a_format_version_is_not_taken_for_an_old_plan() -> None:
    with pytest.raises(PlanFormatError, match="has no field 'format_version'"):
        UpgradePlan.from_json({"pipeline": "page-views"})
