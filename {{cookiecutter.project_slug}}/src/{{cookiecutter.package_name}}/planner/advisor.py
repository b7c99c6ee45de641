"""Does a change to the pipeline fit on its checkpoint, or does it need a new generation?

Compares two pipeline signatures (see ``app/signature.py``): the one a checkpoint was
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
from dataclasses import dataclass
from enum import StrEnum

from ..values.json_fields import JsonFields

# The recorded signature's key for what earlier runs on the checkpoint ran with.
HISTORY = "history"
MAX_WATERMARK_DELAY_MS = "max_watermark_delay_ms"


class Verdict(StrEnum):
    SAME = "same"  # nothing in the signature changed
    SAFE = "safe"  # changes the same checkpoint can carry
    NEEDS_NEW_CHECKPOINT = "needs_new_checkpoint"


@dataclass(frozen=True, slots=True)
class Change:
    """One leaf of the signature that differs, and what that means for the checkpoint."""

    path: str  # e.g. "window.duration_ms"
    old: object
    new: object
    needs_new_checkpoint: bool
    reason: str

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "old": self.old,
            "new": self.new,
            "needs_new_checkpoint": self.needs_new_checkpoint,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, read: JsonFields) -> Change:
        return cls(
            path=read.text("path"),
            old=read.raw("old"),
            new=read.raw("new"),
            needs_new_checkpoint=read.boolean("needs_new_checkpoint"),
            reason=read.text("reason"),
        )

    def sentence(self) -> str:
        verdict = "needs a new checkpoint" if self.needs_new_checkpoint else "is safe"
        change = f"{self.path}: {show_value(self.old)} -> {show_value(self.new)}"
        return f"{change} {verdict}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Advice:
    verdict: Verdict
    changes: tuple[Change, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.verdict.value,
            "changes": [change.to_json() for change in self.changes],
        }

    @classmethod
    def from_json(cls, read: JsonFields) -> Advice:
        verdict = read.text("verdict")
        if verdict not in set(Verdict):
            allowed = ", ".join(Verdict)
            raise read.error(f"advice verdict {verdict!r} is not one of {allowed}")
        return cls(Verdict(verdict), tuple(Change.from_json(c) for c in read.children("changes")))

    def sentences(self) -> list[str]:
        if self.verdict is Verdict.SAME:
            return ["The pipeline is unchanged: it runs on its current checkpoint."]
        lines = [change.sentence() for change in self.changes]
        if self.verdict is Verdict.SAFE:
            lines.append("Every change fits on the current checkpoint: no upgrade is needed.")
        else:
            lines.append(
                "The current checkpoint cannot carry this: the next generation must start "
                "on a new checkpoint from a plan."
            )
        return lines


# Why each part of the signature matters. Parts not listed are judged conservatively.
_RULES: tuple[tuple[str, bool, str], ...] = (
    ("sources", True, "Spark forbids changing sources, their kind or subscribed topics"),
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
    changes = tuple(_judge(path, before, after) for path, before, after in _diff(old, new))
    if not changes:
        return Advice(Verdict.SAME, ())
    needs_new = any(change.needs_new_checkpoint for change in changes)
    return Advice(Verdict.NEEDS_NEW_CHECKPOINT if needs_new else Verdict.SAFE, changes)


def with_history(
    signature: Mapping[str, object], recorded: Mapping[str, object] | None
) -> dict[str, object]:
    """``signature`` as a run records it: with the history of ``recorded``, the signature
    an earlier run on the same checkpoint recorded (None for the first run)."""
    longest = max(_delay_of(signature), 0 if recorded is None else max_watermark_delay_ms(recorded))
    return {**signature, HISTORY: {MAX_WATERMARK_DELAY_MS: longest}}


def max_watermark_delay_ms(recorded: Mapping[str, object]) -> int:
    """The largest watermark delay any run recorded in ``recorded`` used (0 if none)."""
    history = recorded.get(HISTORY)
    recorded_max = (
        _integer(history.get(MAX_WATERMARK_DELAY_MS)) if isinstance(history, Mapping) else 0
    )
    return max(_delay_of(recorded), recorded_max)


def _delay_of(signature: Mapping[str, object]) -> int:
    window = signature.get("window")
    return _integer(window.get("watermark_delay_ms")) if isinstance(window, Mapping) else 0


def _integer(value: object) -> int:
    # JSON true is no delay; a missing or malformed value counts as none recorded.
    return value if type(value) is int else 0


def _without_history(signature: Mapping[str, object]) -> Mapping[str, object]:
    if HISTORY not in signature:
        return signature
    return {key: value for key, value in signature.items() if key != HISTORY}


def _judge(path: str, old: object, new: object) -> Change:
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


def show_value(value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list) and all(isinstance(v, Mapping) and "name" in v for v in value):
        # Aggregates and schemas: "[views count(*), users approx_count_distinct(user_id)]".
        parts = [
            " ".join(str(v) for v in (item["name"], item.get("expression", item.get("type"))))
            for item in value
        ]
        return "[" + ", ".join(parts) + "]"
    return repr(value)
