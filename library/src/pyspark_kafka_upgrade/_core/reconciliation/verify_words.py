"""`verify`'s report for people: a summary line, the windows that are not exact, the limits."""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark_kafka_upgrade._domain.records.damage import generations_of
from pyspark_kafka_upgrade._domain.records.verification import Status, VerifyReport, WindowFinding

# The summary line's order: what was checked, then the promise, then what is by design.
SUMMARY = (
    Status.EXACT,
    Status.LOST,
    Status.WRITTEN_TWICE,
    Status.DIFFERENT,
    Status.LATE,
    Status.OPEN,
)


def clock(epoch_ms: int) -> str:
    """A UTC time, to the second (and the millisecond when it has one)."""
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    return text + (f".{epoch_ms % 1000:03d}" if epoch_ms % 1000 else "") + "Z"


def summary_line(report: VerifyReport) -> str:
    parts = [f"{report.count(status)} {status.value}" for status in SUMMARY]
    parts += [
        f"{report.count(status)} {status.value}"
        for status in (Status.UNCLASSIFIED, Status.ABANDONED)
        if report.count(status)
    ]
    return f"{report.windows} windows checked: " + ", ".join(parts)


def render_report(report: VerifyReport) -> str:
    until = "what the pipeline has read" if report.to_ms is None else clock(report.to_ms)
    generations = ", ".join(map(str, report.generations)) or "none"
    lines = [
        f"verify {report.pipeline}: windows from {clock(report.from_ms)} to {until}, "
        f"generations {generations}",
        f"read back {report.events_read} records; {report.late_events} (event, window) pairs "
        f"late by design; {report.quarantined} quarantined",
        summary_line(report),
    ]
    if report.findings:
        lines += ["", "windows that are not exact:"]
        for finding in report.findings:
            lines += _finding_lines(finding)
        if report.more_findings:
            lines.append(f"  … and {report.more_findings} more (use --json, or a narrower range)")
    if report.quarantined:
        lines += ["", f"quarantined records in the range ({report.quarantined}):"]
        lines += [
            f"  {record.topic}:{record.partition}@{record.offset}: {record.reason}"
            for record in report.quarantined_sample
        ]
        if report.quarantined > len(report.quarantined_sample):
            lines.append(f"  … and {report.quarantined - len(report.quarantined_sample)} more")
    if report.deleted:
        lines += ["", "deleted by retention before verify read them (the rest is verified):"]
        lines += [
            f"  {gone.topic}:{gone.partition} offsets {gone.first} to {gone.end - 1}"
            for gone in report.deleted
        ]
    if report.damaged:
        lines += ["", *damaged_lines(report)]
    if report.notes:
        lines += ["", "notes:", *(f"  {note}" for note in report.notes)]
    lines += ["", verdict(report)]
    return "\n".join(lines)


def damaged_lines(report: VerifyReport) -> list[str]:
    """The committed output verify could not read, one line each, and what that does to the
    windows above: their rows were not compared, so they cannot come out exact."""
    count = len(report.damaged)
    return [
        f"committed output that could not be read ({count}): left out of the comparison, so "
        "the windows whose rows it held show as lost or different above",
        *(f"  {file.message()}" for file in report.damaged),
    ]


def verdict(report: VerifyReport) -> str:
    if report.ok:
        return "OK: nothing lost, nothing written twice, nothing different."
    failing = []
    if report.damaged:
        # First: it explains the lost and different windows that follow it.
        count = len(report.damaged)
        files = "1 damaged output file" if count == 1 else f"{count} damaged output files"
        failing.append(
            f"{files} (generation {', '.join(map(str, generations_of(report.damaged)))})"
        )
    failing += [
        f"{report.count(status)} {status.value}"
        for status in Status
        if status.fails and report.count(status)
    ]
    return "NOT OK: " + ", ".join(failing) + "."


def _finding_lines(finding: WindowFinding) -> list[str]:
    keys = ", ".join(f"{name}={value!r}" for name, value in finding.keys.items())
    writers = ", ".join(map(str, finding.writers)) or "nobody"
    owner = "none" if finding.owner is None else str(finding.owner)
    head = (
        f"  {finding.status.value.upper()}: window {clock(finding.window_start_ms)} to "
        f"{clock(finding.window_end_ms)} {keys} (generation {owner}'s; written by {writers})"
    )
    values = f"    expected {_values(finding.expected)}"
    if finding.written is not None:
        values += f", written {_values(finding.written)}"
    lines = [head, values]
    for event in finding.events:
        batch = "" if event.batch_id is None else f", batch {event.batch_id}"
        lines.append(
            f"    {event.topic}:{event.partition}@{event.offset} {clock(event.event_time_ms)}"
            f" {event.state}{batch}"
        )
    if finding.more_events:
        lines.append(f"    … and {finding.more_events} more events")
    return lines


def _values(values: object) -> str:
    if not isinstance(values, dict) or not values:
        return "nothing"
    return ", ".join(f"{name}={value!r}" for name, value in values.items())
