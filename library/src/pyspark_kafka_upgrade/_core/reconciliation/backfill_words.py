"""`upgrade backfill`'s plan and result for people: the same facts as its ``--json``."""

from __future__ import annotations

from pyspark_kafka_upgrade._core.reconciliation.verify_words import clock
from pyspark_kafka_upgrade._domain.records.backfill_report import BackfillReport
from pyspark_kafka_upgrade._domain.values.validation import WindowSpec
from pyspark_kafka_upgrade._domain.values.words import duration


def render_backfill(report: BackfillReport) -> str:
    metrics = ", ".join(f"{a.name} = {a.expression}" for a in report.aggregates)
    until = "what the pipeline has written" if report.to_ms is None else clock(report.to_ms)
    since = "as far back as Kafka retains" if report.from_ms <= 0 else clock(report.from_ms)
    lines = [
        f"backfill {report.pipeline}: windows from {since} to {until}, with generation "
        f"{report.generation}'s query ({metrics})",
    ]
    for older in report.older_queries:
        if older.window is not None:
            lines.append(
                f"  generation {older.generation} counted in {_grid(older.window)}: this "
                "query's windows over its events were never written, they are computed from "
                "its batches"
            )
        elif older.missing:
            lines.append(
                f"  generation {older.generation} wrote its windows without "
                f"{', '.join(older.missing)}"
            )
    if not report.records:
        lines.append("no committed batch read an event of the range: nothing to read")
        return "\n".join(lines)
    lines.append(f"{'read' if report.applied else 'reads'} {_count(report.records, 'record')}:")
    start, end = report.offsets["start"], report.offsets["end"]
    assert isinstance(start, dict) and isinstance(end, dict)
    for topic, partitions in sorted(start.items()):
        for partition, first in partitions.items():
            lines.append(f"  {topic}:{partition} offsets {first} to {end[topic][partition] - 1}")
    if report.deleted:
        gone = sum(r.end - r.first for r in report.deleted)
        lines.append(f"Kafka no longer retains {gone} of the records those windows were read from:")
        lines += [
            f"  {r.topic}:{r.partition} offsets {r.first} to {r.end - 1}" for r in report.deleted
        ]
    if report.partial_event_times:
        lines.append(
            "windows holding events of these times lost records to retention and are left as "
            "they are (never backfilled with a partial value):"
        )
        lines += [
            f"  {clock(first)} to {clock(last)}" for first, last in report.partial_event_times
        ]
    if not report.applied:
        lines.append(
            "which windows need it is decided when it runs: those whose rows lack the query's "
            "values or differ from them (run without --plan)"
        )
        return "\n".join(lines)
    if report.backfill is None:
        lines.append(
            "nothing to backfill: every window it can rewrite exactly holds the current "
            "query's values"
        )
    else:
        lines.append(
            f"backfill {report.backfill} committed ({report.committed_in}): rewrote "
            f"{_count(report.windows or 0, 'window')} ({_count(report.rows or 0, 'row')}), "
            "those ending in:"
        )
        lines += [
            f"  {clock(r.after_ms)} (exclusive) to {clock(r.through_ms)}" for r in report.ranges
        ]
    if report.left:
        lines.append("left as they are:")
        lines += [f"  {_count(left.windows, 'window')}: {left.reason}" for left in report.left]
        lines += [
            f"    {clock(s.window_start_ms)} to {clock(s.window_end_ms)}: {s.reason}"
            for s in report.left_sample
        ]
        more = sum(left.windows for left in report.left) - len(report.left_sample)
        if more > 0:
            lines.append(f"    … and {more} more")
    return "\n".join(lines)


def _grid(window: WindowSpec) -> str:
    size = duration(window.duration_ms)
    if window.is_tumbling:
        return f"tumbling windows of {size}"
    return f"windows of {size} sliding every {duration(window.slide_ms)}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
