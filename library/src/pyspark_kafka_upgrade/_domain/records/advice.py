"""The advisor's verdict on a change: does the checkpoint carry it, and why, part by part.

``planner.advisor.advise`` makes it; the plan records it, and ``run`` refuses to start on a
checkpoint it says cannot carry the change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from pyspark_kafka_upgrade._domain.values.json_fields import JsonFields


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
