"""`verify` on real Kafka: exact after an upgrade, and each fault caught, its windows named.

One upgrade (10-minute windows sliding every 5, version 2 adds a metric) is proved with the
oracle; `verify` must agree with it (``prove_upgrade`` checks that). Then the output or the
procedure is broken on purpose, one fault at a time, and `verify` must name what broke:

- a committed output file copied into the second generation: written twice;
- a value edited in a committed parquet file: different;
- a naive restart (the new generation starts where the old one stopped): lost, in
  test_backfill.py, which then repairs it;
- events that arrive after their windows were written: late by design, not lost.

A committed file damaged after it was committed (deleted, its bytes changed so that Hadoop's
checksum fails, its size changed, its directory unreadable) is named by `verify` as damaged
output, the rest still verified, and by `output show`, `checkpoint show` and `upgrade plan`
in one line each, with what to do. Unreadable directories need a process that file
permissions apply to: a subprocess, without root's capabilities (``support.permissions``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from pyspark_kafka_upgrade import cli, testing
from pyspark_kafka_upgrade._application.run.run_command import RunRequest, run_pipeline
from pyspark_kafka_upgrade._application.verify import VerifyRange, verify_pipeline
from pyspark_kafka_upgrade._core.reconciliation.verify_words import render_report
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.records.damage import Damage, DamagedFile, Part
from pyspark_kafka_upgrade._domain.records.verification import PairState, Status, VerifyReport
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing import ProofReport
from support.permissions import unprivileged, unreadable
from support.proofs import METRICS_ADDED

pytestmark = pytest.mark.integration

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z
MINUTE_MS = 60_000
USERS = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
WINDOWS = [
    "window.duration=10 minutes",
    "window.slide=5 minutes",
    "window.watermark_delay=5 minutes",
]
EVERYTHING = VerifyRange(from_ms=BASE_MS - 10 * MINUTE_MS)


def page_view(minute: int, article: str | None = None) -> dict[str, object]:
    moment = datetime.fromtimestamp(BASE_MS / 1000 + minute * 60, tz=UTC)
    return {
        "article_id": article or f"a{minute % 3}",
        "user_id": f"u{minute % 5}",
        "event_time": moment.isoformat().replace("+00:00", "Z"),
    }


EVENTS = [page_view(minute) for minute in range(60)]


@pytest.fixture(scope="module")
def upgraded(upgrade_adding_metrics: ProofReport) -> ProofReport:
    # Shared with the backfill's tests, which change a copy of it (conftest.py).
    return upgrade_adding_metrics


def settings_of(report: ProofReport) -> Settings:
    assert report.settings is not None
    return report.settings


def verify(report: ProofReport, spark: SparkSession) -> VerifyReport:
    return verify_pipeline(settings_of(report), EVERYTHING, spark=spark)


def test_after_the_upgrade_every_window_is_exact(
    upgraded: ProofReport, spark: SparkSession
) -> None:
    verified = upgraded.verified
    assert verified is not None and verified.ok
    # The oracle's 30 rows, each exact; the windows after the last watermark are open.
    assert verified.count(Status.EXACT) == len(upgraded.expected) == 30
    assert verified.count(Status.OPEN) > 0
    for status in (Status.LOST, Status.WRITTEN_TWICE, Status.DIFFERENT, Status.LATE):
        assert verified.count(status) == 0, status
    assert verified.events_read == len(EVENTS)
    assert verified.findings == ()


def test_the_command_prints_the_summary_and_exits_0(
    upgraded: ProofReport, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_of(upgraded)
    code = cli.main(PROJECT, [*_sets(settings), "verify", "--from", "2026-11-22T09:50:00Z"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "30 exact, 0 lost, 0 written twice, 0 different, 0 late by design" in out
    assert out.rstrip().endswith("OK: nothing lost, nothing written twice, nothing different.")
    code = cli.main(PROJECT, [*_sets(settings), "verify", "--from", "2026-11-22T09:50Z", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["ok"] is True
    assert VerifyReport.from_json(document).count(Status.EXACT) == 30


def test_a_file_copied_into_a_second_generation_is_written_twice(
    upgraded: ProofReport, spark: SparkSession
) -> None:
    settings = settings_of(upgraded)
    with copied_into_generation_2(settings) as rows:
        verified = verify(upgraded, spark)
    assert not verified.ok
    twice = {_identity(f) for f in verified.findings if f.status is Status.WRITTEN_TWICE}
    assert twice == rows
    for finding in verified.findings:
        assert finding.status is Status.WRITTEN_TWICE
        assert finding.writers == (1, 2)
    assert verify(upgraded, spark).ok  # the file and its log entry are gone again


def test_a_value_edited_in_a_parquet_file_is_different(
    upgraded: ProofReport, spark: SparkSession
) -> None:
    settings = settings_of(upgraded)
    with edited_value(settings) as row:
        verified = verify(upgraded, spark)
    assert not verified.ok
    assert [(_identity(f), f.status) for f in verified.findings] == [(row, Status.DIFFERENT)]
    (finding,) = verified.findings
    assert finding.written is not None
    assert finding.written["views"] == int(str(finding.expected["views"])) + 1
    assert finding.events and all(e.state == PairState.COUNTED for e in finding.events)
    assert verify(upgraded, spark).ok


def test_events_after_their_windows_closed_are_late_by_design_not_lost(
    upgraded: ProofReport, spark: SparkSession
) -> None:
    settings = settings_of(upgraded)
    bootstrap = settings.kafka.bootstrap_servers
    topic = settings.kafka.topics[0]
    # Two events in windows written long ago, then one that moves nothing: the first in
    # windows generation 1 owned and wrote before it stopped (it never reads it), the
    # second in windows generation 2 wrote (it reads it, in a batch whose bound has passed).
    late = [page_view(2, "late-a"), page_view(36, "late-b"), page_view(59)]
    testing.produce(
        bootstrap,
        topic,
        [
            testing.Record(
                partition=0, key=None, value=json.dumps(e).encode(), timestamp_ms=BASE_MS
            )
            for e in late
        ],
    )
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda line: None), spark)
    verified = verify(upgraded, spark)
    assert verified.ok, verified.findings
    assert verified.late_events == 4  # two events, two sliding windows each
    states = {
        _identity(f): ({e.state for e in f.events}, f.owner, f.written)
        for f in verified.findings
        if f.status is Status.LATE
    }
    assert states == {
        (BASE_MS - 5 * MINUTE_MS, ("late-a",)): ({PairState.ARRIVED_AFTER}, 1, None),
        (BASE_MS, ("late-a",)): ({PairState.ARRIVED_AFTER}, 1, None),
        (BASE_MS + 30 * MINUTE_MS, ("late-b",)): ({PairState.LATE}, 2, None),
        (BASE_MS + 35 * MINUTE_MS, ("late-b",)): ({PairState.LATE}, 2, None),
    }
    assert verified.count(Status.LOST) == 0


# -- Damaged output: verify names it and verifies the rest -------------------------------------

RESTORE = "restore it from a backup"
OR_THE_REST = "or run `output show --generation 1` to see the rest"


def test_verify_names_a_missing_committed_file_and_verifies_the_rest(
    upgraded: ProofReport, spark: SparkSession
) -> None:
    with deleted_file(settings_of(upgraded)) as (path, rows):
        verified = verify(upgraded, spark)

    assert verified.damaged == (
        DamagedFile(2, Part.COMMITTED_FILE, path.as_uri(), Damage.MISSING, "is missing"),
    )
    _assert_the_rest_verified(verified, rows)
    text = render_report(verified)
    assert (
        "committed output that could not be read (1): left out of the comparison, so the "
        "windows whose rows it held show as lost or different above\n"
        f"  generation 2's committed file {path.name} is missing: the output was changed outside "
        f"the pipeline; {RESTORE}\n"
    ) in text
    assert text.splitlines()[-1] == (
        f"NOT OK: 1 damaged output file (generation 2), {len(rows)} lost."
    )


def test_verify_names_a_committed_file_whose_checksum_fails_and_verifies_the_rest(
    upgraded: ProofReport, spark: SparkSession
) -> None:
    with flipped_byte(settings_of(upgraded)) as (path, rows, chunk):
        verified = verify(upgraded, spark)

    (damaged,) = verified.damaged
    assert (damaged.generation, damaged.part, damaged.path, damaged.damage) == (
        2,
        Part.COMMITTED_FILE,
        path.as_uri(),
        Damage.UNREADABLE,
    )
    assert re.fullmatch(_checksum_line(path, chunk), damaged.message()), damaged.message()
    _assert_the_rest_verified(verified, rows)


def test_verify_names_a_committed_file_of_another_size_and_verifies_the_rest(
    upgraded: ProofReport, spark: SparkSession
) -> None:
    with grown_file(settings_of(upgraded)) as (path, rows, committed):
        verified = verify(upgraded, spark)

    (damaged,) = verified.damaged
    assert damaged.message() == (
        f"generation 2's committed file {path.name} has {committed + 4} bytes where the sink log "
        f"committed {committed}: the output was changed outside the pipeline after its batch "
        f"committed; {RESTORE}"
    )
    _assert_the_rest_verified(verified, rows)


def test_verify_names_an_output_directory_it_may_not_read_and_verifies_the_rest(
    upgraded: ProofReport, tmp_path: Path
) -> None:
    settings = settings_of(upgraded)
    directory = _local(GenerationLayout(settings.pipeline.root, 2).output)
    rows = _rows_of(_committed(directory))
    with unreadable(directory):
        done = _unprivileged_cli(settings, tmp_path, "verify", "--from", FROM, "--json")

    assert done.returncode == 1, done.stderr
    verified = VerifyReport.from_json(json.loads(done.stdout))
    assert [file.message() for file in verified.damaged] == [
        f"generation 2's sink log {directory}/_spark_metadata cannot be read (permission "
        "denied): give the user that runs this command read access to it and to the "
        "directories above it"
    ]
    _assert_the_rest_verified(verified, rows)


# -- Damaged output: output show, checkpoint show, upgrade plan, in one line -------------------


def test_output_show_refuses_a_missing_committed_file_in_one_line(
    upgraded: ProofReport, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_of(upgraded)
    with deleted_file(settings) as (path, _):
        code = cli.main(PROJECT, [*_sets(settings), "output", "show"])

    assert (code, _error_lines(capsys)) == (
        1,
        [
            f"generation 2's committed file {path.name} is missing: the output was changed "
            f"outside the pipeline; {RESTORE}, {OR_THE_REST}"
        ],
    )


def test_output_show_refuses_a_committed_file_whose_checksum_fails_in_one_line(
    upgraded: ProofReport, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_of(upgraded)
    with flipped_byte(settings) as (path, _, chunk):
        code = cli.main(PROJECT, [*_sets(settings), "output", "show"])

    (line,) = _error_lines(capsys)
    assert code == 1
    assert re.fullmatch(_checksum_line(path, chunk) + re.escape(f", {OR_THE_REST}"), line), line


def test_output_show_refuses_a_committed_file_of_another_size_in_one_line(
    upgraded: ProofReport, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_of(upgraded)
    with grown_file(settings) as (path, _, committed):
        code = cli.main(PROJECT, [*_sets(settings), "output", "show"])

    assert (code, _error_lines(capsys)) == (
        1,
        [
            f"generation 2's committed file {path.name} has {committed + 4} bytes where the sink "
            f"log committed {committed}: the output was changed outside the pipeline after its "
            f"batch committed; {RESTORE}, {OR_THE_REST}"
        ],
    )


def test_checkpoint_show_names_committed_files_missing_or_of_another_size(
    upgraded: ProofReport, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_of(upgraded)
    with deleted_file(settings) as (gone, _), grown_file(settings, skip=gone) as (grown, _, size):
        code = cli.main(PROJECT, [*_sets(settings), "checkpoint", "show"])
    out = capsys.readouterr().out

    assert code == 0
    # One sentence each, in the sink log's order.
    assert {line for line in out.splitlines() if line.startswith("Generation 2's")} == {
        f"Generation 2's committed file {gone.name} is missing: the output was changed outside "
        f"the pipeline; {RESTORE}.",
        f"Generation 2's committed file {grown.name} has {size + 4} bytes where the sink log "
        f"committed {size}: the output was changed outside the pipeline after its batch "
        f"committed; {RESTORE}.",
    }
    assert re.search(r"^  live files +\d+, 2 damaged$", out, re.MULTILINE), out


def test_upgrade_plan_reads_no_committed_file_so_a_missing_one_does_not_stop_it(
    upgraded: ProofReport, capsys: pytest.CaptureFixture[str]
) -> None:
    # It plans from the checkpoint and the sink log; the output files are verify's business.
    settings = settings_of(upgraded)
    with deleted_file(settings):
        code = cli.main(PROJECT, [*_sets(settings), "upgrade", "plan", "--no-scan"])

    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [["output", "show"], ["checkpoint", "show"], ["upgrade", "plan", "--no-scan"]],
    ids=" ".join,
)
def test_an_output_directory_this_user_may_not_read_is_one_line(
    upgraded: ProofReport, tmp_path: Path, command: list[str]
) -> None:
    settings = settings_of(upgraded)
    directory = _local(GenerationLayout(settings.pipeline.root, 2).output)
    with unreadable(directory):
        done = _unprivileged_cli(settings, tmp_path, *command)

    rest = f", {OR_THE_REST}" if command[0] == "output" else ""
    assert (done.returncode, done.stderr.splitlines()) == (
        1,
        [
            f"page_views_pipeline: error: generation 2's sink log {directory}/_spark_metadata "
            "cannot be read (permission denied): give the user that runs this command read "
            f"access to it and to the directories above it{rest}"
        ],
    )


FROM = "2026-11-22T09:50:00Z"


def _assert_the_rest_verified(
    verified: VerifyReport, rows: set[tuple[int, tuple[str, ...]]]
) -> None:
    """The damaged file's windows are lost, and every other window is as it was: the 30
    exact ones exact (the late events an earlier test added stay late by design)."""
    assert not verified.ok
    assert rows
    failing = {_identity(f): f.status for f in verified.findings if f.status.fails}
    assert failing == dict.fromkeys(rows, Status.LOST)
    assert verified.count(Status.EXACT) == 30 - len(rows)


def _checksum_line(path: Path, chunk: int) -> str:
    """The line for ``path`` whose bytes no longer match Hadoop's checksum of ``chunk``."""
    return (
        re.escape(f"generation 2's committed file {path.name} cannot be read by Spark (")
        + r"FAILED_READ_FILE\.[A-Z_]+: ChecksumException: Checksum error: at "
        + f"{chunk}"
        + r" exp: -?\d+ got: -?\d+\)"
        + re.escape(
            f": the output was changed outside the pipeline, or the storage damaged it; {RESTORE}"
        )
    )


def _error_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    prefix = "page_views_pipeline: error: "
    lines = capsys.readouterr().err.splitlines()
    assert all(line.startswith(prefix) for line in lines), lines
    return [line.removeprefix(prefix) for line in lines]


def _unprivileged_cli(
    settings: Settings, cwd: Path, *command: str
) -> subprocess.CompletedProcess[str]:
    """The example's CLI in a subprocess that file permissions apply to, even as root."""
    argv = [sys.executable, "-m", "pyspark_kafka_upgrade._example", *_sets(settings), *command]
    return subprocess.run(
        unprivileged(argv),
        cwd=cwd,  # no ./pipeline.toml there
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


# -- Faults ----------------------------------------------------------------------------------


@contextmanager
def copied_into_generation_2(settings: Settings) -> Iterator[set[tuple[int, tuple[str, ...]]]]:
    """Copy a committed file of generation 1 into generation 2, and commit it in its log.

    Its rows get generation 2's new column, as a copy made to "fill a gap" would.
    """
    old = _local(GenerationLayout(settings.pipeline.root, 1).output)
    new = _local(GenerationLayout(settings.pipeline.root, 2).output)
    source = next(path for path in _committed(old) if pq.read_metadata(path).num_rows)
    schema = pq.read_schema(next(iter(_committed(new))))
    rows = [{**row, "users": 1} for row in pq.read_table(source).to_pylist()]
    copy = new / f"part-copied-{uuid.uuid4().hex}.parquet"
    _write_as_spark(pa.Table.from_pylist(rows, schema=schema), copy)
    log = _last_log(new)
    entry = {
        "path": copy.as_uri(),
        "size": copy.stat().st_size,
        "isDir": False,
        "modificationTime": int(copy.stat().st_mtime * 1000),
        "blockReplication": 1,
        "blockSize": 33554432,
        "action": "add",
    }
    with _edited(log):
        log.write_text(log.read_text().rstrip("\n") + "\n" + json.dumps(entry))
        try:
            yield {(_ms(row["window_start"]), (row["article_id"],)) for row in rows}
        finally:
            copy.unlink()


@contextmanager
def edited_value(settings: Settings) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Add one to ``views`` in the first row of a committed file of generation 2."""
    new = _local(GenerationLayout(settings.pipeline.root, 2).output)
    path = next(path for path in _committed(new) if pq.read_metadata(path).num_rows)
    log = _log_naming(new, path)
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["views"] += 1
    with _edited(path, log):
        _write_as_spark(pa.Table.from_pylist(rows, schema=table.schema), path)
        log.write_text(_with_size(log.read_text(), path))
        yield (_ms(rows[0]["window_start"]), (rows[0]["article_id"],))


@contextmanager
def deleted_file(settings: Settings) -> Iterator[tuple[Path, set[tuple[int, tuple[str, ...]]]]]:
    """Delete a committed file of generation 2 with rows (and its checksum file)."""
    path = _committed_with_rows(settings)
    rows = _rows_of([path])
    crc = path.with_name(f".{path.name}.crc")
    with _edited(path, *([crc] if crc.exists() else [])):
        path.unlink()
        crc.unlink(missing_ok=True)
        yield path, rows


@contextmanager
def flipped_byte(
    settings: Settings,
) -> Iterator[tuple[Path, set[tuple[int, tuple[str, ...]]], int]]:
    """Change one byte in the middle of a committed file of generation 2, keeping its size
    and Hadoop's checksum file beside it: Spark's read then fails on the checksum. Yields
    the file, its rows and the 512-byte chunk whose checksum fails."""
    path = _committed_with_rows(settings)
    rows = _rows_of([path])
    content = path.read_bytes()
    middle = len(content) // 2
    try:
        path.write_bytes(content[:middle] + bytes([content[middle] ^ 0xFF]) + content[middle + 1 :])
        yield path, rows, middle // 512 * 512
    finally:
        path.write_bytes(content)


@contextmanager
def grown_file(
    settings: Settings, *, skip: Path | None = None
) -> Iterator[tuple[Path, set[tuple[int, tuple[str, ...]]], int]]:
    """Append 4 bytes to a committed file of generation 2 (other than ``skip``, with rows if
    there is one): its size is no longer the sink log's. Yields the file, its rows and the size
    the log committed."""
    path = _committed_with_rows(settings, skip=skip)
    rows = _rows_of([path])
    size = path.stat().st_size
    with _edited(path):
        path.write_bytes(path.read_bytes() + b"\0\0\0\0")
        yield path, rows, size


def _committed_with_rows(settings: Settings, *, skip: Path | None = None) -> Path:
    """A committed file of generation 2, one with rows if there is one besides ``skip``."""
    new = _local(GenerationLayout(settings.pipeline.root, 2).output)
    files = [path for path in _committed(new) if path != skip]
    return next((path for path in files if pq.read_metadata(path).num_rows), files[0])


def _rows_of(paths: list[Path]) -> set[tuple[int, tuple[str, ...]]]:
    return {
        (_ms(row["window_start"]), (row["article_id"],))
        for path in paths
        for row in pq.read_table(path).to_pylist()
    }


def _identity(finding: object) -> tuple[int, tuple[str, ...]]:
    return (finding.window_start_ms, tuple(finding.keys.values()))  # type: ignore[attr-defined]


def _sets(settings: Settings) -> list[str]:
    """The --set arguments that reproduce ``settings`` for the CLI."""
    return [
        "--set", f"pipeline.name={settings.pipeline.name}",
        "--set", f"pipeline.root={settings.pipeline.root}",
        "--set", f"kafka.bootstrap_servers={settings.kafka.bootstrap_servers}",
        "--set", f"kafka.topics={settings.kafka.topics[0]}",
        "--set", f"kafka.connector={settings.kafka.connector}",
        "--set", f"ledger.store={settings.ledger.store}",
        "--set", f"ledger.location={settings.ledger.location}",
        *(item for setting in [*WINDOWS, METRICS_ADDED] for item in ("--set", setting)),
    ]  # fmt: skip


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file:"))


def _committed(directory: Path) -> list[Path]:
    paths = []
    for log in _logs(directory):
        for line in log.read_text().splitlines()[1:]:
            entry = json.loads(line)
            if entry["action"] == "add":
                paths.append(_local(entry["path"].replace("file:///", "file:/")))
    return paths


def _write_as_spark(table: pa.Table, path: Path) -> None:
    # Spark writes timestamps as INT96 and reads them back only in that form.
    pq.write_table(table, path, use_deprecated_int96_timestamps=True)


def _logs(directory: Path) -> list[Path]:
    """The sink log's files, not Hadoop's .crc files beside them."""
    return sorted(
        (p for p in (directory / "_spark_metadata").iterdir() if p.name.split(".")[0].isdigit()),
        key=lambda p: int(p.name.split(".")[0]),
    )


def _last_log(directory: Path) -> Path:
    return _logs(directory)[-1]


@contextmanager
def _edited(*files: Path) -> Iterator[None]:
    """Edit files in place: Hadoop's checksum files beside them would refuse the new bytes,
    so they are set aside meanwhile, and everything is put back afterwards."""
    kept = {path: path.read_bytes() for path in files}
    checksums = {
        crc: crc.read_bytes()
        for path in files
        if (crc := path.with_name(f".{path.name}.crc")).exists()
    }
    for crc in checksums:
        crc.unlink()
    try:
        yield
    finally:
        for path, content in kept.items():
            path.write_bytes(content)
        for crc, content in checksums.items():
            crc.write_bytes(content)


def _log_naming(directory: Path, file: Path) -> Path:
    for log in _logs(directory):
        if file.name in log.read_text():
            return log
    raise AssertionError(f"no sink log names {file}")


def _with_size(text: str, file: Path) -> str:
    lines = text.splitlines()
    for index, line in enumerate(lines[1:], start=1):
        entry = json.loads(line)
        if entry["path"].endswith(file.name):
            entry["size"] = file.stat().st_size
            lines[index] = json.dumps(entry)
    return "\n".join(lines)


def _ms(moment: datetime) -> int:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return round(aware.timestamp() * 1000)
