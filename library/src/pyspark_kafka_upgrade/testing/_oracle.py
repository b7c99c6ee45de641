"""The proof suite's oracle: what an append-mode windowed count must write, from the events.

Independent of the code it checks. It imports nothing from the package: it reads the events
as produced (their JSON, their partition and offset), the checkpoint's files as Spark writes
them, and the output through each generation's own ``_spark_metadata``, and applies Spark's
rules (FACTS, "Structured Streaming semantics") in a few lines of its own:

- windows start at multiples of the slide (epoch-aligned) and hold ``[start, start + size)``;
- a window is written once the watermark reaches its end (``end <= watermark``);
- an event no later than the watermark delay behind the newest one is never late.

Every comparison ends in a :class:`Comparison`, whose failure message lists expected and
found per window and key, which generations wrote it, and the events that explain it.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark_kafka_upgrade.testing._kafka.clients import Client
from pyspark_kafka_upgrade.testing._kafka.topics import Record, produce

# (window start in ms, grouping key): one output row's identity.
WindowKey = tuple[int, str]


@dataclass(frozen=True, slots=True)
class Event:
    """One record as produced: where it sits in Kafka and what it says."""

    topic: str
    partition: int
    offset: int
    time_ms: int
    key: str

    def describe(self) -> str:
        return f"{self.topic}:{self.partition}@{self.offset} {clock(self.time_ms)}"


@dataclass(frozen=True, slots=True)
class Grid:
    """A window spec, as the oracle reasons about it."""

    size_ms: int
    slide_ms: int | None = None

    @property
    def step_ms(self) -> int:
        return self.slide_ms or self.size_ms

    def starts(self, time_ms: int) -> list[int]:
        """The starts of every window holding ``time_ms``, earliest first."""
        latest = time_ms - time_ms % self.step_ms
        first = latest - self.size_ms + self.step_ms
        return [start for start in range(first, latest + 1, self.step_ms) if start <= time_ms]

    def last_end(self, time_ms: int) -> int:
        """The end of the latest window holding ``time_ms``: it is late once this is <= W."""
        return self.starts(time_ms)[-1] + self.size_ms


class EventLog:
    """Produces records and remembers each as an :class:`Event` at the offset it got.

    Offsets are counted per partition from the first record this log produced to a topic,
    so every topic a test uses must be new (``unique_topic``) and written only here.
    """

    def __init__(self, bootstrap: str, client: Client = None) -> None:
        self.bootstrap = bootstrap
        # A secured broker's login for producing (SecuredKafka.admin_client).
        self.client = client
        self.events: list[Event] = []
        self._next: Counter[tuple[str, int]] = Counter()

    def produce(self, topic: str, records: Sequence[Record]) -> list[Event]:
        produce(self.bootstrap, topic, list(records), client=self.client)
        made = []
        for record in records:
            value = json.loads(record.value or b"{}")
            offset = self._next[(topic, record.partition)]
            self._next[(topic, record.partition)] += 1
            time_ms, key = parse_time(value["event_time"]), value["article_id"]
            made.append(Event(topic, record.partition, offset, time_ms, key))
        self.events.extend(made)
        return made


def parse_time(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def clock(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).strftime("%H:%M:%S")


def expected_counts(
    events: Iterable[Event],
    grid: Grid,
    *,
    written_through_ms: int,
    counted: Callable[[Event, int], bool] = lambda event, window_end: True,
) -> Counter[WindowKey]:
    """The rows an append-mode count writes once the watermark is ``written_through_ms``.

    ``counted(event, window_end)`` says whether the event counts in that window; by default
    every event does (no event is late).
    """
    expected: Counter[WindowKey] = Counter()
    for event in events:
        for start in grid.starts(event.time_ms):
            end = start + grid.size_ms
            if end <= written_through_ms and counted(event, end):
                expected[(start, event.key)] += 1
    return expected


# --- The checkpoint, read from Spark's own files --------------------------------------------


def committed_batches(checkpoint: str | Path) -> list[int]:
    commits = Path(checkpoint) / "commits"
    if not commits.is_dir():
        return []
    return sorted(int(path.name) for path in commits.iterdir() if path.name.isdigit())


def planned_batches(checkpoint: str | Path) -> list[int]:
    offsets = Path(checkpoint) / "offsets"
    if not offsets.is_dir():
        return []
    return sorted(int(path.name) for path in offsets.iterdir() if path.name.isdigit())


def _offset_log(checkpoint: str | Path, batch: int) -> list[str]:
    lines = (Path(checkpoint) / "offsets" / str(batch)).read_text().splitlines()
    assert lines and lines[0] in ("v1", "v2"), f"offsets/{batch} has no version line"
    return lines


def batch_watermark_ms(checkpoint: str | Path, batch: int) -> int:
    """``batchWatermarkMs`` of ``offsets/<batch>``: the watermark that batch wrote with."""
    return int(json.loads(_offset_log(checkpoint, batch)[1] or "{}").get("batchWatermarkMs", 0))


def end_offsets(checkpoint: str | Path, batch: int) -> dict[str, dict[int, int]]:
    """The first source's offsets in ``offsets/<batch>`` (v2 prefixes the source's id)."""
    line = _offset_log(checkpoint, batch)[2]
    text = line.split(":", 1)[1] if line and not line.startswith("{") else line
    raw: dict[str, dict[str, Any]] = json.loads(text)
    return {topic: {int(p): int(o) for p, o in parts.items()} for topic, parts in raw.items()}


def final_watermark_ms(checkpoint: str | Path) -> int:
    """W of the last committed batch: every window ending at or before it has been written."""
    batches = committed_batches(checkpoint)
    assert batches, f"no committed batch in {checkpoint}"
    return batch_watermark_ms(checkpoint, batches[-1])


# --- The output, each generation through its own _spark_metadata -----------------------------


def written_rows(spark: Any, directory: str | Path) -> list[tuple[int, str, int]]:
    """(window start, key, views) per committed row of one generation's output directory
    (``<root>/output/generation-<n>``) read through its ``_spark_metadata``; or, where the
    pipeline writes a Delta table (``<root>/output/table``), that generation's rows in it,
    read with delta-rs, an engine other than the pipeline's."""
    path = Path(str(directory).removeprefix("file:"))
    table = path.parent / "table"
    if not (path / "_spark_metadata").is_dir() and (table / "_delta_log").is_dir():
        return _table_rows(table, int(path.name.removeprefix("generation-")))
    if not (path / "_spark_metadata").is_dir():
        return []
    rows = spark.read.parquet(str(path)).select("window_start", "article_id", "views").collect()
    return [
        (round(row.window_start.timestamp() * 1000), row.article_id, int(row.views)) for row in rows
    ]


def _table_rows(table: Path, generation: int) -> list[tuple[int, str, int]]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    return [
        (round(row["window_start"].timestamp() * 1000), row["article_id"], int(row["views"]))
        for row in rows
        if row["generation"] == generation
    ]


def sink_batches(directory: str | Path) -> list[int]:
    """The batch ids in a file sink's ``_spark_metadata`` (a file ``N`` or ``N.compact``)."""
    log = Path(str(directory).removeprefix("file:")) / "_spark_metadata"
    if not log.is_dir():
        return []
    names = (path.name.removesuffix(".compact") for path in log.iterdir())
    return sorted(int(name) for name in names if name.isdigit())


@dataclass
class Comparison:
    """Expected rows against the rows each generation wrote, with what explains a difference."""

    expected: Counter[WindowKey]
    written: Mapping[str, Sequence[tuple[int, str, int]]]  # writer's name -> its rows
    events: Sequence[Event]
    grid: Grid
    found: Counter[WindowKey] = field(init=False)
    writers: dict[WindowKey, list[str]] = field(init=False)

    def __post_init__(self) -> None:
        self.found = Counter()
        self.writers = defaultdict(list)
        for writer, rows in self.written.items():
            for start, key, views in rows:
                self.found[(start, key)] += views
                self.writers[(start, key)].append(writer)

    @property
    def shortfall(self) -> Counter[WindowKey]:
        """Events expected but not counted, per window and key."""
        return self.expected - self.found

    @property
    def surplus(self) -> Counter[WindowKey]:
        """Events counted beyond the expected, per window and key."""
        return self.found - self.expected

    @property
    def written_twice(self) -> dict[WindowKey, list[str]]:
        return {key: names for key, names in self.writers.items() if len(names) > 1}

    @property
    def exact(self) -> bool:
        return not self.shortfall and not self.surplus and not self.written_twice

    def report(self, limit: int = 20) -> str:
        """Each differing window and key: expected, found, who wrote it, and its events."""
        differing = sorted(set(self.shortfall) | set(self.surplus) | set(self.written_twice))
        lines = [
            f"{len(differing)} window/key rows differ from the oracle "
            f"(lost {sum(self.shortfall.values())} events, "
            f"{sum(self.surplus.values())} counted too often, "
            f"{len(self.written_twice)} rows written more than once):"
        ]
        for start, key in differing[:limit]:
            end = start + self.grid.size_ms
            writers = ", ".join(self.writers.get((start, key), [])) or "nobody"
            inside = [
                event.describe()
                for event in self.events
                if event.key == key and start <= event.time_ms < end
            ]
            more = f", … {len(inside) - 8} more" if len(inside) > 8 else ""
            shown = ", ".join(inside[:8]) + more
            lines.append(
                f"  window {clock(start)}-{clock(end)} key {key}: expected "
                f"{self.expected.get((start, key), 0)}, found {self.found.get((start, key), 0)} "
                f"(written by {writers}); its events: {shown or 'none'}"
            )
        if len(differing) > limit:
            lines.append(f"  … {len(differing) - limit} more")
        return "\n".join(lines)

    def check(self) -> None:
        """Fail, with :meth:`report`, unless every row is written once with the right count."""
        if not self.exact:
            raise AssertionError(self.report())
