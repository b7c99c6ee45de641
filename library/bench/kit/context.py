"""What a benchmark is handed, and what it hands back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from bench.record import Figure

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Connector = Literal["python", "builtin"]
T = TypeVar("T")


@dataclass(frozen=True)
class Result:
    """A benchmark's figures, and every check of correctness that failed (empty: none)."""

    figures: tuple[Figure, ...]
    problems: tuple[str, ...] = ()
    # What it measured on: records, rounds, partitions... for the results file.
    sizes: dict[str, int] = field(default_factory=dict)


@dataclass
class Context:
    """One run's shared pieces: the size, a broker, a work directory, one Spark session."""

    quick: bool
    workdir: Path
    bootstrap: str
    connectors: tuple[Connector, ...]
    say: Callable[[str], None]
    # Builds the shared session on first use; benchmarks that need none never pay for it.
    start_spark: Callable[[], SparkSession]
    _spark: SparkSession | None = None

    def size(self, quick: T, full: T) -> T:
        return quick if self.quick else full

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            self._spark = self.start_spark()
        return self._spark

    def stop(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None


@dataclass(frozen=True)
class Benchmark:
    name: str
    # One line for `python -m bench list` and the progress lines.
    summary: str
    run: Callable[[Context], Result]
    # The pure ones run without a broker: `--only planner,replay` starts none.
    needs_kafka: bool = True
    # Delta's jars and session extension: the run's one session is built with them.
    needs_delta: bool = False
