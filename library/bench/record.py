"""What one run of the benchmarks found, as a typed record with a format version.

Pure: no Spark, no Kafka, no I/O. ``bench/results/<timestamp>.json`` is a :class:`BenchRun`
as JSON; ``make bench-report`` reads every one back with :meth:`BenchRun.from_json`, so a
file written by an older harness either reads or says in one line why it does not.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

FORMAT_VERSION = 1

Mode = Literal["full", "quick"]
Status = Literal["ok", "wrong", "crashed"]
Comparison = Literal["<=", ">=", "<"]


class BenchRecordError(ValueError):
    """A results file that is not a run of these benchmarks, or of a newer format."""


@dataclass(frozen=True)
class Target:
    """What the ratio must be, e.g. ``<= 1.1``; a missed target is reported, never fatal."""

    comparison: Comparison
    value: float

    def met(self, ratio: float) -> bool:
        if self.comparison == "<=":
            return ratio <= self.value
        if self.comparison == ">=":
            return ratio >= self.value
        return ratio < self.value

    def __str__(self) -> str:
        sign = {"<=": "≤", ">=": "≥", "<": "<"}[self.comparison]
        return f"{sign} {self.value:g}"


@dataclass(frozen=True)
class Series:
    """Repeated measurements of one quantity, the warm-up already left out."""

    values: tuple[float, ...]
    unit: str = ""

    def __post_init__(self) -> None:
        if not self.values:
            raise BenchRecordError("a series needs at least one measurement")

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)


@dataclass(frozen=True)
class Figure:
    """One ratio, measured side by side, with the absolute values it was computed from.

    ``key`` names the figure across runs (the history's line), ``label`` says what it divides.
    """

    key: str
    label: str
    ratio: Series
    target: Target
    absolute: dict[str, Series] = field(default_factory=dict)

    @property
    def met(self) -> bool:
        """Judged on the median: one slow round on a shared machine is not a regression."""
        return self.target.met(self.ratio.median)


@dataclass(frozen=True)
class Outcome:
    """One benchmark's run: its figures, or what went wrong.

    ``wrong``: it ran, and a check of correctness failed (a window written twice, a plan
    that disagrees with the events); ``crashed``: it raised.
    """

    benchmark: str
    status: Status
    seconds: float
    figures: tuple[Figure, ...] = ()
    problems: tuple[str, ...] = ()
    sizes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Environment:
    """What the figures depend on besides the code: the machine and the components."""

    cores: int
    load_1m: float
    memory_gib: float
    python: str
    spark: str
    kafka: str
    backend: str
    connectors: tuple[str, ...]
    commit: str


@dataclass(frozen=True)
class BenchRun:
    started_at: str  # ISO 8601, UTC
    mode: Mode
    environment: Environment
    outcomes: tuple[Outcome, ...]
    format_version: int = FORMAT_VERSION

    @property
    def failed(self) -> bool:
        """Crashes and wrong results fail a run; speed never does."""
        return any(outcome.status != "ok" for outcome in self.outcomes)

    def figures(self) -> list[Figure]:
        return [figure for outcome in self.outcomes for figure in outcome.figures]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BenchRun:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise BenchRecordError(f"not JSON: {error}") from None
        if not isinstance(data, dict):
            raise BenchRecordError("not a benchmark run: the JSON is not an object")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise BenchRecordError(
                f"format version {version!r}; this harness reads version {FORMAT_VERSION}"
            )
        try:
            return cls(
                started_at=data["started_at"],
                mode=data["mode"],
                environment=_environment(data["environment"]),
                outcomes=tuple(_outcome(item) for item in data["outcomes"]),
            )
        except (KeyError, TypeError) as error:
            raise BenchRecordError(f"not a benchmark run: {error!r}") from None


def _environment(data: dict[str, Any]) -> Environment:
    return Environment(**{**data, "connectors": tuple(data["connectors"])})


def _series(data: dict[str, Any]) -> Series:
    return Series(tuple(float(value) for value in data["values"]), data.get("unit", ""))


def _figure(data: dict[str, Any]) -> Figure:
    return Figure(
        key=data["key"],
        label=data["label"],
        ratio=_series(data["ratio"]),
        target=Target(data["target"]["comparison"], float(data["target"]["value"])),
        absolute={name: _series(value) for name, value in data["absolute"].items()},
    )


def _outcome(data: dict[str, Any]) -> Outcome:
    return Outcome(
        benchmark=data["benchmark"],
        status=data["status"],
        seconds=float(data["seconds"]),
        figures=tuple(_figure(item) for item in data["figures"]),
        problems=tuple(data["problems"]),
        sizes=dict(data["sizes"]),
    )
