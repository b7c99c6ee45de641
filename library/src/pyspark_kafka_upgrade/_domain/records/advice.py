"""The advisor's verdict on a change: does the checkpoint carry it, and why, part by part.

``planner.advisor.advise`` makes it; the plan records it, and ``run`` refuses to start on a
checkpoint it says cannot carry the change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from pyspark_kafka_upgrade._domain.values.json_record import Field, Fields, JsonRecord, Shape


class Verdict(StrEnum):
    SAME = "same"  # nothing in the signature changed
    SAFE = "safe"  # changes the same checkpoint can carry
    NEEDS_NEW_CHECKPOINT = "needs_new_checkpoint"


@dataclass(frozen=True, slots=True)
class Change(JsonRecord):
    """One leaf of the signature that differs, and what that means for the checkpoint."""

    path: str  # e.g. "window.duration_ms"
    old: object
    new: object
    needs_new_checkpoint: bool
    reason: str

    def sentence(self) -> str:
        verdict = "needs a new checkpoint" if self.needs_new_checkpoint else "is safe"
        change = f"{self.path}: {show_value(self.old)} -> {show_value(self.new)}"
        return f"{change} {verdict}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Advice(JsonRecord):
    json_shape = Shape(
        Fields(Field("verdict", unknown="advice verdict {value!r} is not one of {allowed}"))
    )

    verdict: Verdict
    changes: tuple[Change, ...]

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
