"""Does a change to the pipeline fit on its checkpoint, or does it need a new generation?

Compares two pipeline signatures (see ``model/signature.py``): the one a checkpoint was
written with, recorded in the ledger, and the one the current code and settings build.
The rules are Spark's, from its guide's "Recovery Semantics after Changes in a Streaming
Query", made concrete for this pipeline:

- the number or kind of sources, and the subscribed topics, may not change;
- the file sink's path (and so its format) may not change;
- stateful operations may not change, nor the schema of their state: the window, the
  event time it is computed from, the grouping keys and the aggregates;
- the output mode may not change;
- a checkpoint is not carried across a major Spark version by this pipeline.

What stays outside the signature (rate limits, trigger interval, the Kafka client's
options) may always change on the same checkpoint.

A signature recorded in the ledger may also carry ``history``: what earlier runs on the
same checkpoint ran with (the largest watermark delay). It describes the checkpoint's past,
not the job, so the comparison leaves it out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from pyspark_kafka_upgrade._domain.records.advice import Advice, Change, Verdict
from pyspark_kafka_upgrade._domain.records.signature import FORMAT_KEY, HISTORY

# Parts a signature of format 1 did not record: absent there, they are not a change.
_ADDED_IN_FORMAT_2 = ("events", "query")

# A new grid splits the generations in event time at E: true, planned, and easy to miss on a
# dashboard, so the refusal says it before anyone plans, once, on the first window change.
_GRID = ("window.duration_ms", "window.slide_ms")
_GAP = (
    "; after the upgrade, the old windows still open at the split (E, the end of the last "
    "window written) are written by neither generation: a dashboard of the old windows shows "
    "a gap there, and the plan names them"
)

# Why each part of the signature matters. Parts not listed are judged conservatively.
_RULES: tuple[tuple[str, bool, str], ...] = (
    ("sources", True, "Spark forbids changing sources, their kind or subscribed topics"),
    (
        "events",
        False,
        "parsing is stateless: records read from now on are parsed with the new events, and "
        "a change the state does see shows in the output schema",
    ),
    (
        "query",
        True,
        "the query's code changed, and whether Spark's state carries a code change cannot be "
        "told without running it: a new generation, which replays the open windows, is the "
        "safe side",
    ),
    ("event_time", True, "the state holds windows of the old event time"),
    ("window.duration_ms", True, "the state holds windows of the old size"),
    ("window.slide_ms", True, "the state holds windows of the old slide"),
    (
        "window.watermark_delay_ms",
        False,
        "the delay is not part of the state; the watermark never moves back, so a longer "
        "delay takes effect as new events raise it",
    ),
    ("grouping_keys", True, "the grouping keys are the state's key schema"),
    ("aggregates", True, "the aggregates are the state's value schema"),
    ("output_schema", True, "the state and output schema change"),
    ("sink", True, "a file sink's path and format cannot change on a checkpoint"),
    ("output_mode", True, "Spark forbids changing the output mode"),
)


def advise(old: Mapping[str, object], new: Mapping[str, object]) -> Advice:
    """Compare the signature a checkpoint was written with against the current one."""
    old, new = _without_history(old), _without_history(new)
    changes = _gap_said_once(
        tuple(_judge(path, before, after) for path, before, after in _diff(old, new))
    )
    if not changes:
        return Advice(Verdict.SAME, ())
    needs_new = any(change.needs_new_checkpoint for change in changes)
    return Advice(Verdict.NEEDS_NEW_CHECKPOINT if needs_new else Verdict.SAFE, changes)


def _gap_said_once(changes: tuple[Change, ...]) -> tuple[Change, ...]:
    """The first change of the window's grid also says what the upgrade leaves unwritten."""
    first = next((i for i, change in enumerate(changes) if change.path in _GRID), None)
    if first is None:
        return changes
    said = replace(changes[first], reason=changes[first].reason + _GAP)
    return (*changes[:first], said, *changes[first + 1 :])


def _without_history(signature: Mapping[str, object]) -> Mapping[str, object]:
    """The parts that describe the job: not the checkpoint's history, not the format."""
    return {key: value for key, value in signature.items() if key not in (HISTORY, FORMAT_KEY)}


def _judge(path: str, old: object, new: object) -> Change:
    if old is None and path in _ADDED_IN_FORMAT_2:
        return Change(path, old, new, False, "the old generation's signature predates it")
    if path == "spark_version":
        major_changed = _major(old) != _major(new)
        reason = (
            "a checkpoint is not carried across a major Spark version"
            if major_changed
            else "Spark reads checkpoints of the same major version"
        )
        return Change(path, old, new, major_changed, reason)
    for prefix, needs_new, reason in _RULES:
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return Change(path, old, new, needs_new, reason)
    return Change(path, old, new, True, "not a part this version knows to be safe")


def _diff(old: object, new: object, path: str = "") -> Iterator[tuple[str, object, object]]:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            child = f"{path}.{key}" if path else str(key)
            yield from _diff(old.get(key), new.get(key), child)
    elif old != new:
        yield path, old, new


def _major(version: object) -> str:
    return str(version).split(".", 1)[0]
